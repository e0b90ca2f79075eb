"""Is a change between two runs real? Rank test, bootstrap interval and a noise floor.

Per-step samples (one value per training step) of a metric in the base and the new run:

- Mann–Whitney U (two-sided): exact null distribution for small samples without ties,
  normal approximation with tie and continuity correction otherwise. With so few steps
  that even a complete separation cannot reach ``alpha`` (3 vs 3 steps: p >= 0.1), Welch's
  t-test is used instead, so a large change in a short capture is still recognised;
- a percentile bootstrap interval for the difference of the means (seeded: reproducible);
- the noise floor: the larger of the two runs' own step-to-step spread (1.4826 × MAD, the
  robust standard deviation, so one warm-up step does not hide everything).

A change is *significant* when the rank test rejects at ``alpha`` **and** the medians
differ by more than the noise floor: a difference smaller than a run's own step-to-step
spread is never called a regression (docs/diff.md, "Noise").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

ALPHA = 0.05
MIN_STEPS = 3  # fewer steps on either side: no test (the verdict is "unknown")
BOOTSTRAP = 2000
EXACT_LIMIT = 60  # n + m up to which the exact U distribution is used (no ties)
MAD_SCALE = 1.4826  # MAD -> standard deviation for normal data

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Significance:
    n_base: int
    n_new: int
    test: str  # "mann-whitney" | "welch-t" | "none"
    p_value: float | None  # None: too few steps to test
    ci_low: float | None  # bootstrap 95 % interval of mean(new) - mean(base)
    ci_high: float | None
    noise: float  # the larger robust step-to-step spread of the two runs
    delta_median: float
    significant: bool | None  # None: not testable (fewer than MIN_STEPS steps on a side)


def robust_sd(x: F64) -> float:
    if len(x) < 2:
        return 0.0
    return float(MAD_SCALE * np.median(np.abs(x - np.median(x))))


def _exact_u_cdf(n: int, m: int) -> F64:
    """P(U <= u) for u = 0..n*m under H0 (no ties), by the standard counting recurrence."""
    # ways[j][u]: arrangements of i x's and j y's with statistic u, built up over i
    ways = [np.zeros(n * m + 1) for _ in range(m + 1)]
    for j in range(m + 1):
        ways[j][0] = 1.0
    for _i in range(1, n + 1):
        new = [np.zeros(n * m + 1) for _ in range(m + 1)]
        new[0][0] = 1.0
        for j in range(1, m + 1):
            # f(i, j, u) = f(i-1, j, u-j) + f(i, j-1, u)
            shifted = np.zeros(n * m + 1)
            shifted[j:] = ways[j][: n * m + 1 - j]
            new[j] = shifted + new[j - 1]
        ways = new
    counts = ways[m]
    cdf: F64 = np.cumsum(counts) / counts.sum()
    return cdf


def mann_whitney(base: F64, new: F64) -> float:
    """Two-sided p-value of the Mann–Whitney U test."""
    n, m = len(base), len(new)
    both = np.concatenate((base, new))
    ranks = _rank(both)
    u = float(ranks[:n].sum() - n * (n + 1) / 2.0)
    ties = len(np.unique(both)) < len(both)
    if not ties and n + m <= EXACT_LIMIT:
        cdf = _exact_u_cdf(n, m)
        lo = min(u, n * m - u)
        return float(min(1.0, 2.0 * cdf[round(lo)]))
    _, counts = np.unique(both, return_counts=True)
    total = n + m
    tie_term = float((counts**3 - counts).sum()) / (total * (total - 1))
    var = n * m / 12.0 * ((total + 1) - tie_term)
    if var <= 0:
        return 1.0
    z = (abs(u - n * m / 2.0) - 0.5) / math.sqrt(var)
    return float(min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2.0))))


def _rank(x: F64) -> F64:
    """Average ranks (1-based), ties share the mean of their positions."""
    order = np.argsort(x, kind="mergesort")
    sx = x[order]
    first = np.concatenate(([True], sx[1:] != sx[:-1]))
    group = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    ends = np.append(starts[1:], len(sx))
    avg = (starts + ends + 1) / 2.0  # mean of 1-based positions start+1..end
    ranks = np.empty(len(x))
    ranks[order] = avg[group]
    return ranks


def bootstrap_ci(base: F64, new: F64, *, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(new) - mean(base), steps resampled per run."""
    rng = np.random.default_rng(seed)
    b = base[rng.integers(0, len(base), size=(BOOTSTRAP, len(base)))].mean(axis=1)
    w = new[rng.integers(0, len(new), size=(BOOTSTRAP, len(new)))].mean(axis=1)
    d = w - b
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(d, [tail, 100.0 - tail])
    return float(lo), float(hi)


def compare_samples(base: F64, new: F64, *, alpha: float = ALPHA) -> Significance:
    base = np.asarray(base, dtype=np.float64)
    new = np.asarray(new, dtype=np.float64)
    noise = max(robust_sd(base), robust_sd(new))
    dmed = float(np.median(new) - np.median(base)) if len(base) and len(new) else 0.0
    if min(len(base), len(new)) < MIN_STEPS:
        return Significance(len(base), len(new), "none", None, None, None, noise, dmed, None)
    if 2.0 / math.comb(len(base) + len(new), len(base)) < alpha:
        test, p = "mann-whitney", mann_whitney(base, new)
    else:
        test, p = "welch-t", welch(base, new)
    lo, hi = bootstrap_ci(base, new)
    significant = p < alpha and abs(dmed) > noise
    return Significance(len(base), len(new), test, p, lo, hi, noise, dmed, significant)


def welch(base: F64, new: F64) -> float:
    """Two-sided p-value of Welch's unequal-variance t-test."""
    vb, vn = float(base.var(ddof=1)) / len(base), float(new.var(ddof=1)) / len(new)
    diff = float(new.mean() - base.mean())
    if vb + vn == 0:
        return 1.0 if diff == 0 else 0.0
    t = diff / math.sqrt(vb + vn)
    df = (vb + vn) ** 2 / (vb**2 / (len(base) - 1) + vn**2 / (len(new) - 1))
    return t_two_sided(t, df)


def t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom: I_{df/(df+t^2)}(df/2, 1/2)."""
    return _betainc(df / 2.0, 0.5, df / (df + t * t))


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), by its continued fraction (modified Lentz)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    if x > (a + 1.0) / (a + b + 2.0):  # the fraction converges fast only below this point
        return 1.0 - _betainc(b, a, 1.0 - x)
    log_front = a * math.log(x) + b * math.log1p(-x) - math.log(a) - (
        math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    )
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    frac = d
    for m in range(1, 300):
        for num in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            frac *= c * d
        if abs(c * d - 1.0) < 1e-14:
            break
    return min(1.0, math.exp(log_front) * frac)
