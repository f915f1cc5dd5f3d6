"""The regression gate's statistics: how much slower one run is than another, with an exact
interval.

Repetitions of a benchmark are modelled as times that differ between two runs by a factor:
current = factor x baseline. On log times that factor is a shift, and the Hodges-Lehmann
estimator with its exact distribution-free interval (Lehmann 1963; Bauer 1972,
"Constructing confidence sets using rank statistics") answers "how large is the shift":
the n*m pairwise differences log(y_j) - log(x_i), sorted, and the interval between the
k-th smallest and the k-th largest, k read from the exact null distribution of the
Mann-Whitney U statistic. No resampling, no seed, no normal approximation: the same
input always gives the same interval, and it covers the true factor with at least the
stated confidence whatever the distribution of the times. Written here because scipy is
not on every machine this runs on.
"""
import math
from dataclasses import dataclass


def u_counts(n, m):
    """How many of the C(n+m, n) orderings of two samples of sizes n and m (no ties) give
    each value u = 0..n*m of the Mann-Whitney U statistic: the coefficients of the Gaussian
    binomial [n+m choose n]_q = prod_{i=1..n} (1 - q^(m+i)) / (1 - q^i), exact integers."""
    size = n * m + 1
    poly = [1] + [0] * (size - 1)
    # Arithmetic modulo q^size: a coefficient below size needs only lower ones, so the
    # truncated products and quotients are exact, and the result has degree n*m.
    for i in range(1, n + 1):
        for u in range(size - 1, m + i - 1, -1):  # times (1 - q^(m+i))
            poly[u] -= poly[u - (m + i)]
        for u in range(i, size):  # divided by (1 - q^i): times 1 + q^i + q^2i + ...
            poly[u] += poly[u - i]
    return poly


def interval_rank(n, m, confidence):
    """(k, achieved confidence): k the largest rank with P(U <= k-1) <= (1 - confidence)/2
    when nothing changed, so that [k-th smallest, k-th largest] of the n*m differences is a
    `confidence` interval; achieved = 1 - 2 P(U <= k-1) >= confidence. k is 0 when no
    interval of that confidence exists (too few repetitions: 3 and 3 give at best 90%)."""
    if n == 0 or m == 0:
        return 0, 0.0
    if n * m > EXACT_LIMIT:
        return _interval_rank_normal(n, m, confidence)
    counts = u_counts(n, m)
    total = math.comb(n + m, n)
    tail_allowed = (1 - confidence) / 2 * total
    k, below = 0, 0
    while k < len(counts) and below + counts[k] <= tail_allowed:
        below += counts[k]
        k += 1
    return (k, 1 - 2 * below / total) if k else (0, 0.0)


# Beyond this many pairs (200 x 200 repetitions) the exact count costs most of a second; the
# normal approximation of U is within a rank or two there.
EXACT_LIMIT = 40000


def _interval_rank_normal(n, m, confidence):
    z = _normal_quantile(1 - (1 - confidence) / 2)
    k = math.floor(n * m / 2 - z * math.sqrt(n * m * (n + m + 1) / 12))
    return (k, confidence) if k >= 1 else (0, 0.0)


def _normal_quantile(p):
    """The standard normal quantile by bisection on erf (no scipy)."""
    low, high = -10.0, 10.0
    for _ in range(100):
        mid = (low + high) / 2
        if 0.5 * math.erfc(-mid / math.sqrt(2)) < p:
            low = mid
        else:
            high = mid
    return (low + high) / 2


@dataclass
class Shift:
    estimate: float  # Hodges-Lehmann: the median of the pairwise differences y - x
    low: float  # None when no interval of the asked confidence exists
    high: float
    confidence: float  # what the interval achieves (>= the asked confidence), 0 without one


def hodges_lehmann(x, y, confidence=0.95):
    """The shift of y relative to x with its exact distribution-free interval."""
    diffs = sorted(b - a for a in x for b in y)
    if not diffs:
        return Shift(None, None, None, 0.0)
    middle = len(diffs) // 2
    estimate = diffs[middle] if len(diffs) % 2 else (diffs[middle - 1] + diffs[middle]) / 2
    k, achieved = interval_rank(len(x), len(y), confidence)
    if k == 0:
        return Shift(estimate, None, None, 0.0)
    return Shift(estimate, diffs[k - 1], diffs[len(diffs) - k], achieved)


def ratio_interval(baseline, current, confidence=0.95):
    """The factor current / baseline (times > 0) as a Shift of log times, exponentiated:
    estimate, low and high are ratios."""
    shift = hodges_lehmann([math.log(t) for t in baseline], [math.log(t) for t in current], confidence)
    exp = (lambda v: None if v is None else math.exp(v))
    return Shift(exp(shift.estimate), exp(shift.low), exp(shift.high), shift.confidence)


def median(values):
    ordered = sorted(values)
    if not ordered:
        return None
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
