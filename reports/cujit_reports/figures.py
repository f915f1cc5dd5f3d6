"""What a report says about one benchmark: its figure (median with noise), its paired ratio
against the floor (with the interval the benchmark computed), the vendor-cache state and the
device it was measured on, and the device's L2 size.

Pure functions over bench_json records; no plotting, no formatting beyond short text.
"""
import math
import re
from dataclasses import dataclass

from . import bench_json, joining

# Vendor-cache states in the order reports show them (context.vendor_cache); None is a run
# whose record predates the field (older JSON, the peers').
STATES = ("cold", "vendor-cache-warm", None)
STATE_LABELS = {"cold": "cold (vendor cache off)", "vendor-cache-warm": "vendor-cache-warm",
                None: "vendor cache not recorded"}


def state_of(run):
    """The run's vendor-cache state: "cold", "vendor-cache-warm" or None (not recorded). Any
    other value is refused: a report must not guess which column a figure belongs to."""
    state = run.context.get("vendor_cache")
    if state not in STATES:
        raise bench_json.SchemaError(f"{run.path}: context.vendor_cache is {state!r}, not one of "
                                     "'cold', 'vendor-cache-warm'")
    return state


def state_label(state):
    return STATE_LABELS[state]


def is_peer(run):
    return bool(run.context.get("peer"))


def device_of(runs):
    """The one device the cujit runs were measured on ("not recorded" when none says); a
    SchemaError naming every device and its files when they differ: one report, one device."""
    devices = {}
    for run in runs:
        if not is_peer(run) and run.context.get("device"):
            devices.setdefault(run.context["device"], []).append(run.path)
    if len(devices) > 1:
        listed = "; ".join(f"{device!r} ({', '.join(paths)})" for device, paths in sorted(devices.items()))
        raise bench_json.SchemaError(f"runs from more than one device cannot share a report or a history line: {listed}")
    return next(iter(devices), "not recorded")


def device_label(device):
    """How a report names the device. A run without a GPU records "none (<why>)", the why
    often the driver loader's whole error: the report says "none (no driver)" or "none (no
    device)" instead, once per heading; the run lines keep the record's reason."""
    if device.startswith("none ("):
        return "none (no driver)" if "libcuda" in device or "driver" in device else "none (no device)"
    return device


def without_device(device):
    """Whether `device` (as recorded) says the run had no GPU."""
    return device.startswith("none")


NO_DEVICE_STATE_LABEL = "no GPU (the vendor-cache state does not apply)"


def modes_of(runs):
    modes = sorted({run.context.get("cujit_mode") or "not recorded" for run in runs if not is_peer(run)})
    return " + ".join(modes) if modes else "not recorded"


@dataclass
class StateRuns:
    state: str
    joined: joining.Joined  # the runs of this state, joined into one table
    # Every run of the state had no GPU: NVRTC's, nvJitLink's and the driver's caches were
    # never in play, so "vendor-cache-warm" (what CUDA_CACHE_DISABLE unset records) says nothing.
    no_device: bool = False

    @property
    def label(self):
        return NO_DEVICE_STATE_LABEL if self.no_device else state_label(self.state)

    @property
    def data(self):
        """Base name -> Benchmark over the runs of this state."""
        return self.joined.data


def by_state(runs):
    """StateRuns for each vendor-cache state the cujit runs cover, in STATES order. Peer runs
    are kept apart (see peers_of): they record no state of their own that would match."""
    grouped = {}
    for run in runs:
        if not is_peer(run):
            grouped.setdefault(state_of(run), []).append(run)
    return [StateRuns(state, joining.join(grouped[state]),
                      all(without_device(run.context.get("device") or "") for run in grouped[state]))
            for state in STATES if state in grouped]


def peers_of(runs):
    """The peer runs joined into one table."""
    return joining.join([run for run in runs if is_peer(run)])


# ---------------------------------------------------------------------------------------
# One figure: median with its noise.

@dataclass
class Figure:
    median: float = None  # seconds
    noise: float = None  # relative: cv, or the half-width of a 95% interval over the median
    noise_kind: str = None  # "cv" or "95% CI"
    samples: int = 0
    spread: float = None  # absolute error bar, seconds (stddev, or the CI half-width)
    error: str = None  # errored: the benchmark's message
    skipped: str = None


def _sample_cv(samples):
    if len(samples) < 2:
        return None, None
    mean = sum(samples) / len(samples)
    stddev = math.sqrt(sum((s - mean) ** 2 for s in samples) / (len(samples) - 1))
    return (stddev / mean if mean else None), stddev


def figure(b):
    """The Figure of a Google Benchmark record (repetitions with _median / _stddev / _cv
    aggregates; computed from the repetitions when the aggregates are absent)."""
    if b is None:
        return None
    if b.error is not None or b.skipped is not None:
        return Figure(error=b.error, skipped=b.skipped)
    cv, stddev = b.cv, b.stddev
    if cv is None or stddev is None:
        own_cv, own_stddev = _sample_cv(b.samples)
        cv = cv if cv is not None else own_cv
        stddev = stddev if stddev is not None else own_stddev
    return Figure(b.median, cv, "cv" if cv is not None else None, len(b.samples), stddev)


# ---------------------------------------------------------------------------------------
# Paired ratios: pair/<family>/<scenario...>, one entry with the interleaved rounds' result.

PAIR_COUNTERS = ("ratio", "ratio_low", "ratio_high", "rounds", "cujit_s", "floor_s", "cujit_noise",
                 "floor_noise", "same_output")


@dataclass
class Pair:
    ratio: float = None
    low: float = None
    high: float = None
    rounds: int = None
    cujit_s: float = None
    floor_s: float = None
    cujit_noise: float = None
    floor_noise: float = None
    same_output: bool = None  # None: not recorded
    error: str = None
    skipped: str = None

    def side(self, which):
        """The Figure of one side (which: "cujit" or "floor") from the pair's median and noise."""
        if self.error is not None or self.skipped is not None:
            return Figure(error=self.error, skipped=self.skipped)
        median, noise = getattr(self, which + "_s"), getattr(self, which + "_noise")
        if median is None:
            return None
        return Figure(median, noise, "95% CI" if noise is not None else None, self.rounds or 0,
                      noise * median if noise is not None else None)


def pair(b):
    """The Pair of a pair/... record. With several entries (repetitions) the one whose ratio is
    the median is read whole, so that a ratio and its interval always come from one entry."""
    if b is None:
        return None
    if b.error is not None or b.skipped is not None:
        return Pair(error=b.error, skipped=b.skipped)
    ratios = b.counters.get("ratio", [])
    index = sorted(range(len(ratios)), key=lambda i: ratios[i])[len(ratios) // 2] if ratios else 0

    def value(key):
        values = b.counters.get(key, [])
        return values[index] if index < len(values) else None

    rounds, same = value("rounds"), value("same_output")
    return Pair(value("ratio"), value("ratio_low"), value("ratio_high"),
                int(rounds) if rounds is not None else None, value("cujit_s"), value("floor_s"),
                value("cujit_noise"), value("floor_noise"), None if same is None else same == 1)


# ---------------------------------------------------------------------------------------
# The device's L2 cache: where reduce_into figures above HBM bandwidth are cache hits.

MIB = 1 << 20
# By device name when the run record has no device_l2_bytes (the vendor's data sheets).
L2_BY_DEVICE = [("H100", 50 * MIB), ("H200", 50 * MIB)]


def l2_bytes(context, path="run"):
    """(bytes, where it came from) or (None, why not)."""
    value = context.get("device_l2_bytes")
    if value is not None:
        if isinstance(value, str) and value.isdigit():
            return int(value), "context.device_l2_bytes"
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value, "context.device_l2_bytes"
        raise bench_json.SchemaError(f"{path}: context.device_l2_bytes must be a whole number of bytes, not {value!r}")
    device = context.get("device") or ""
    for name, size in L2_BY_DEVICE:
        if re.search(rf"\b{name}\b", device):
            return size, f"the {name}'s L2 size (by device name)"
    return None, f"the L2 size of {device or 'an unrecorded device'!r} is not known"


# Bytes per item of the element types reduce_into benchmarks (bench_reduce.cpp).
ITEM_BYTES = {"int8": 1, "uint8": 1, "int16": 2, "uint16": 2, "int32": 4, "uint32": 4, "float32": 4,
              "int64": 8, "uint64": 8, "float64": 8}

# Benchmarks whose size axis is a working set: (name pattern with the type and n, bytes of
# n items of that type).
_SIZED = [(re.compile(r"(?:cujit/reduce_into|aot/cub_device_reduce)/(\w+?)_sum/(\d+)$"),
           lambda type_name, n: ITEM_BYTES[type_name] * n if type_name in ITEM_BYTES else None),
          (re.compile(r"raw/copy_bandwidth/(int32)/(\d+)$"), lambda type_name, n: 8 * n)]  # read + written


def working_set(b, name):
    """The bytes a reduce / copy benchmark touches: its `bytes` counter, else n from its name
    times the bytes per item of its type; None for other benchmarks (and unknown types)."""
    for pattern, size in _SIZED:
        match = pattern.match(name)
        if match and b is not None:
            counted = b.counter("bytes")
            return int(counted) if counted else size(match.group(1), int(match.group(2)))
    return None
