"""The Mann-Whitney U test, as google/benchmark's compare.py applies it to repetitions.

Two-sided, normal approximation with tie correction and continuity correction, which is
what scipy.stats.mannwhitneyu(..., alternative="two-sided", method="asymptotic") computes.
Written here because scipy is not on every machine this runs on.
"""
import math


def _ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        rank = (i + j) / 2 + 1
        for k in range(i, j + 1):
            ranks[order[k]] = rank
        i = j + 1
    return ranks


def mann_whitney_u(a, b):
    """(U of a, two-sided p value). p is 1.0 when the test cannot say anything."""
    n1, n2 = len(a), len(b)
    if n1 == 0 or n2 == 0:
        return 0.0, 1.0
    values = list(a) + list(b)
    ranks = _ranks(values)
    r1 = sum(ranks[:n1])
    u1 = r1 - n1 * (n1 + 1) / 2
    n = n1 + n2
    counts = {}
    for v in values:
        counts[v] = counts.get(v, 0) + 1
    tie = sum(t ** 3 - t for t in counts.values())
    sigma = math.sqrt(n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1)))) if n > 1 else 0.0
    if sigma == 0:
        return u1, 1.0
    mu = n1 * n2 / 2
    z = (abs(u1 - mu) - 0.5) / sigma
    p = math.erfc(max(z, 0.0) / math.sqrt(2))
    return u1, min(1.0, p)
