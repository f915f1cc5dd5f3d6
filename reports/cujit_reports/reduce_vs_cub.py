"""reduce_into against the ahead-of-time CUB floor, per element type: CUB time / cujit time
(GPU time per call) at each n, and the goal users judge the reduce by: >= 98% for
n >= 2^22, >= 90% at every n.

The ratio is that of the two medians, `aot/cub_device_reduce/<type>_sum/<n>` over
`cujit/reduce_into/<type>_sum/<n>`. Its error is the repetitions' spread of both sides
propagated: the two are separate benchmarks, not interleaved rounds, so no repetition of
one pairs with a repetition of the other (per-repetition ratios would depend on an order
that means nothing), and for a ratio of independent figures the relative spreads add in
quadrature, to first order: r * sqrt(cv_cujit^2 + cv_CUB^2). That is the spread of one
repetition's ratio, as the other plots' stddev bars are, not an interval for the median.
"""
import math
import re
from dataclasses import dataclass

from . import figures

LARGE_N = 1 << 22
LARGE_N_GOAL = 0.98
EVERY_N_GOAL = 0.90

_CUJIT_NAME = re.compile(r"cujit/reduce_into/(\w+)_sum/(\d+)$")
_CUB_NAME = re.compile(r"aot/cub_device_reduce/(\w+)_sum/(\d+)$")


def cujit_name(type_name, n):
    return f"cujit/reduce_into/{type_name}_sum/{n}"


def cub_name(type_name, n):
    return f"aot/cub_device_reduce/{type_name}_sum/{n}"


def parse(name):
    """(type, n) of a cujit/reduce_into or aot/cub_device_reduce base name, else None."""
    match = _CUJIT_NAME.match(name) or _CUB_NAME.match(name)
    return (match.group(1), int(match.group(2))) if match else None


def goal(n):
    return LARGE_N_GOAL if n >= LARGE_N else EVERY_N_GOAL


def percent(ratio):
    return f"{ratio:.1%}"


def meets(ratio, n):
    """Whether `ratio` meets the goal at n, judged on the ratio as shown (to 0.1%): a cell
    never reads "98.0%" and a miss at once, and 0.05% is far inside every cell's spread."""
    return round(ratio * 1000) >= round(goal(n) * 1000)


def size_label(n):
    """'2^22' for a power of two above 1, else the number ('1', '1000')."""
    return f"2^{n.bit_length() - 1}" if n > 1 and n & (n - 1) == 0 else str(n)


def type_order(type_name):
    """Integers before floating point, then by item size, signed before unsigned: int8,
    uint8, int16, ..., uint64, float32, float64. A type of unknown size follows its kind's."""
    integer = type_name.lstrip("u").startswith("int")
    return (not integer, figures.ITEM_BYTES.get(type_name, math.inf), type_name.startswith("u"), type_name)


def ratio_with_spread(cujit_median, cujit_cv, cub_median, cub_cv):
    """(CUB / cujit, its spread or None without both cvs); None for a time that is not > 0."""
    if not cujit_median or not cub_median:
        return None
    ratio = cub_median / cujit_median
    if cujit_cv is None or cub_cv is None:
        return ratio, None
    return ratio, ratio * math.hypot(cujit_cv, cub_cv)


@dataclass
class Cell:
    type_name: str
    n: int
    cujit: figures.Figure = None  # None: not in the run
    cub: figures.Figure = None

    def _measured(self):
        return all(f is not None and f.error is None and f.skipped is None for f in (self.cujit, self.cub))

    @property
    def ratio_and_spread(self):
        """(ratio, spread or None), or None when a side is absent, failed or has no time."""
        if not self._measured():
            return None
        return ratio_with_spread(self.cujit.median, self.cujit.noise, self.cub.median, self.cub.noise)

    @property
    def goal(self):
        return goal(self.n)

    @property
    def meets(self):
        measured = self.ratio_and_spread
        return measured is not None and meets(measured[0], self.n)


def cells(data):
    """A Cell for every (type, n) either side of which is in `data` (base name -> Benchmark),
    in type order, then by n."""
    keys = {parse(name) for name in data} - {None}
    return [Cell(t, n, figures.figure(data.get(cujit_name(t, n))), figures.figure(data.get(cub_name(t, n))))
            for t, n in sorted(keys, key=lambda k: (type_order(k[0]), k[1]))]


def measured(cells_):
    """The cells with a ratio, as (cell, ratio, spread or None)."""
    out = []
    for cell in cells_:
        ratio = cell.ratio_and_spread
        if ratio is not None:
            out.append((cell, *ratio))
    return out
