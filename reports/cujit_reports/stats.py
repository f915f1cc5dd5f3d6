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
import statistics
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


# ---- paired samples -------------------------------------------------------------------------
# Two programs timed once each per round give paired samples (exec to first result: a program
# and its floor; the A/B gate: the baseline build and the current one). The ratio is estimated
# on per-round log ratios d_i = log(a_i / b_i):
# - the estimate is the Hodges-Lehmann estimator, the median of the Walsh averages
#   (d_i + d_j) / 2 over i <= j (pseudo_median), exponentiated;
# - its interval is the Wilcoxon signed-rank interval: the Walsh averages sorted, from the
#   k-th smallest to the k-th largest, k read from the exact null distribution of the
#   signed-rank statistic (n = 9: k = 6 of 45, 96.1% coverage), exponentiated.
# Each side's noise is the relative half width of the exact order-statistic (sign-test)
# interval of its median (n = 9: the 2nd to the 8th of 9, 96.1% coverage).
# bench/support/paired.cpp is the C++ twin; both are tested against the same reference values.

PAIRED_CONFIDENCE = 0.95


def walsh_averages(values):
    """(v_i + v_j) / 2 for every i <= j, sorted."""
    values = list(values)
    return sorted((values[i] + values[j]) / 2 for i in range(len(values)) for j in range(i, len(values)))


def pseudo_median(values):
    """The median of the Walsh averages."""
    if not values:
        raise ValueError("Hodges-Lehmann of no values")
    return statistics.median(walsh_averages(values))


def signed_rank_counts(n):
    """counts[w]: how many of the 2^n sign assignments give the signed-rank statistic
    W+ = w (sum of the ranks 1..n marked positive), for w = 0 .. n(n+1)/2."""
    counts = [1]
    for rank in range(1, n + 1):
        grown = counts + [0] * rank
        for w, count in enumerate(counts):
            grown[w + rank] += count
        counts = grown
    return counts


def _largest_k(counts, total, confidence):
    """(k, coverage) for the largest k whose two-sided miss probability
    2 * (counts[0] + ... + counts[k-1]) / total is at most 1 - confidence (counts[j]: the
    outcomes of the statistic equal to j under the null); None when even k = 1 misses."""
    best, below = None, 0
    for k in range(1, len(counts) + 1):
        below += counts[k - 1]
        if 2 * below / total <= 1 - confidence + 1e-12:
            best = (k, 1 - 2 * below / total)
        else:
            break
    return best


def signed_rank_k(n, confidence=PAIRED_CONFIDENCE):
    """(k, coverage): the interval [A_(k), A_(M+1-k)] over the M = n(n+1)/2 sorted Walsh
    averages with the largest k whose two-sided miss probability 2 P(W+ <= k-1) is at most
    1 - confidence, and its exact coverage; None when no such k exists (n < 6)."""
    return _largest_k(signed_rank_counts(n), 2 ** n, confidence)


def hl_interval(values, confidence=PAIRED_CONFIDENCE):
    """(low, high, coverage): the Wilcoxon signed-rank interval of the centre of `values`;
    None when there are too few values for one."""
    return _kth_from_each_end(walsh_averages(values), signed_rank_k(len(values), confidence))


def median_k(n, confidence=PAIRED_CONFIDENCE):
    """(k, coverage): the order-statistic interval [x_(k), x_(n+1-k)] of a median with the
    largest k whose two-sided miss probability 2 P(Binomial(n, 1/2) <= k-1) is at most
    1 - confidence; None when none exists (n < 6)."""
    return _largest_k([math.comb(n, j) for j in range(n // 2)], 2 ** n, confidence)


def median_interval(values, confidence=PAIRED_CONFIDENCE):
    """(low, high, coverage) of the median of `values`; None when too few."""
    return _kth_from_each_end(sorted(values), median_k(len(values), confidence))


def _kth_from_each_end(ordered, found):
    """(ordered[k-1], ordered[-k], coverage) for found = (k, coverage); None without one."""
    if found is None:
        return None
    k, coverage = found
    return ordered[k - 1], ordered[len(ordered) - k], coverage


def relative_noise(values, confidence=PAIRED_CONFIDENCE):
    """Half the width of the median's interval over the median; None when too few values."""
    interval = median_interval(values, confidence)
    centre = statistics.median(values) if values else 0
    if interval is None or centre <= 0:
        return None
    return (interval[1] - interval[0]) / 2 / centre


def paired_ratio(program, floor, confidence=PAIRED_CONFIDENCE):
    """The ratio program / floor from per-round pairs of positive times: a dict with
    ratio, ratio_low, ratio_high and ratio_confidence (the interval's exact coverage).
    ValueError for unpaired, non-positive or too few samples."""
    if len(program) != len(floor):
        raise ValueError(f"unpaired samples: {len(program)} program rounds, {len(floor)} floor rounds")
    if any(not (v > 0 and math.isfinite(v)) for v in list(program) + list(floor)):
        raise ValueError("times must be positive and finite")
    logs = [math.log(p / f) for p, f in zip(program, floor)]
    interval = hl_interval(logs, confidence)
    if interval is None:
        raise ValueError(f"{len(logs)} rounds are too few for a {confidence:.0%} interval (at least 6)")
    low, high, coverage = interval
    return {"ratio": math.exp(pseudo_median(logs)), "ratio_low": math.exp(low), "ratio_high": math.exp(high),
            "ratio_confidence": coverage}
