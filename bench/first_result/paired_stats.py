"""Distribution-free statistics of the "exec to first result" family, exact and
deterministic (no resampling, no seed).

A program and the floor run once each per round, so the rounds give paired samples. The
ratio program / floor is estimated on per-round log ratios d_i = log(program_i / floor_i):
- the estimate is the Hodges-Lehmann estimator, the median of the Walsh averages
  (d_i + d_j) / 2 over i <= j, exponentiated;
- its 95% interval is the Wilcoxon signed-rank interval: the Walsh averages sorted, from the
  k-th smallest to the k-th largest, k read from the exact null distribution of the
  signed-rank statistic (n = 9: k = 6 of 45, 96.1% coverage), exponentiated.
Each side's noise is the relative half width of the exact order-statistic (sign-test)
95% interval of its median (n = 9: the 2nd to the 8th of 9, 96.1% coverage).
"""
import math
import statistics

CONFIDENCE = 0.95


def walsh_averages(values):
    """(v_i + v_j) / 2 for every i <= j, sorted."""
    values = list(values)
    return sorted((values[i] + values[j]) / 2 for i in range(len(values)) for j in range(i, len(values)))


def hodges_lehmann(values):
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


def signed_rank_k(n, confidence=CONFIDENCE):
    """(k, coverage): the interval [A_(k), A_(M+1-k)] over the M = n(n+1)/2 sorted Walsh
    averages with the largest k whose two-sided miss probability 2 P(W+ <= k-1) is at most
    1 - confidence, and its exact coverage; None when no such k exists (n < 6)."""
    return _largest_k(signed_rank_counts(n), 2 ** n, confidence)


def hl_interval(values, confidence=CONFIDENCE):
    """(low, high, coverage): the Wilcoxon signed-rank interval of the centre of `values`;
    None when there are too few values for one."""
    found = signed_rank_k(len(values), confidence)
    if found is None:
        return None
    k, coverage = found
    averages = walsh_averages(values)
    return averages[k - 1], averages[len(averages) - k], coverage


def median_k(n, confidence=CONFIDENCE):
    """(k, coverage): the order-statistic interval [x_(k), x_(n+1-k)] of a median with the
    largest k whose two-sided miss probability 2 P(Binomial(n, 1/2) <= k-1) is at most
    1 - confidence; None when none exists (n < 6)."""
    return _largest_k([math.comb(n, j) for j in range(n // 2)], 2 ** n, confidence)


def median_interval(values, confidence=CONFIDENCE):
    """(low, high, coverage) of the median of `values`; None when too few."""
    found = median_k(len(values), confidence)
    if found is None:
        return None
    k, coverage = found
    ordered = sorted(values)
    return ordered[k - 1], ordered[len(ordered) - k], coverage


def relative_noise(values, confidence=CONFIDENCE):
    """Half the width of the median's interval over the median; None when too few values."""
    interval = median_interval(values, confidence)
    centre = statistics.median(values) if values else 0
    if interval is None or centre <= 0:
        return None
    return (interval[1] - interval[0]) / 2 / centre


def paired_ratio(program, floor, confidence=CONFIDENCE):
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
    return {"ratio": math.exp(hodges_lehmann(logs)), "ratio_low": math.exp(low), "ratio_high": math.exp(high),
            "ratio_confidence": coverage}
