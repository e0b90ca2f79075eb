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

import dataclasses
import functools
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


@functools.lru_cache(maxsize=64)
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
    cdf.flags.writeable = False  # shared through the cache
    return cdf


def mann_whitney(base: F64, new: F64) -> float:
    """Two-sided p-value of the Mann–Whitney U test."""
    return float(mann_whitney_rows(base[None, :], new[None, :])[0])


CHUNK = 1 << 22  # pair comparisons held in memory at once


def mann_whitney_rows(base: F64, new: F64) -> F64:
    """Two-sided Mann–Whitney p-values of each row pair: ``base`` (K, n) vs ``new`` (K, m)."""
    k, n = base.shape
    m = new.shape[1]
    u = np.empty(k)
    step = max(1, CHUNK // max(n * m, 1))
    for lo in range(0, k, step):  # one pass per chunk of rows, not per row
        b = base[lo : lo + step, :, None]
        w = new[lo : lo + step, None, :]
        u[lo : lo + step] = (b > w).sum(axis=(1, 2)) + 0.5 * (b == w).sum(axis=(1, 2))
    both = np.sort(np.concatenate((base, new), axis=1), axis=1)
    total = n + m
    starts = np.ones((k, total), dtype=bool)
    starts[:, 1:] = both[:, 1:] != both[:, :-1]
    ties = ~starts.all(axis=1)
    p = np.empty(k)
    exact = ~ties if total <= EXACT_LIMIT else np.zeros(k, dtype=bool)
    if exact.any():
        cdf = _exact_u_cdf(n, m)
        tail = np.rint(np.minimum(u[exact], n * m - u[exact])).astype(np.int64)
        p[exact] = np.minimum(1.0, 2.0 * cdf[tail])
    approx = ~exact
    if approx.any():
        # tie correction: sum(t^3 - t) over each row's runs of equal values
        flat = starts.ravel()
        run = np.cumsum(flat) - 1
        length = np.bincount(run).astype(np.float64)
        row_of_run = np.flatnonzero(flat) // total
        tie_term = np.bincount(row_of_run, weights=length**3 - length, minlength=k)
        var = n * m / 12.0 * ((total + 1) - tie_term / (total * (total - 1)))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.abs(u - n * m / 2.0) - 0.5) / np.sqrt(var)
        z = np.where(var > 0, np.maximum(z, 0.0), 0.0)
        p_norm = np.array([math.erfc(v) for v in (z / math.sqrt(2.0)).tolist()])
        p[approx] = np.minimum(1.0, p_norm[approx])
    return p


def bootstrap_ci(base: F64, new: F64, *, level: float = 0.95, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of mean(new) - mean(base), steps resampled per run."""
    rng = np.random.default_rng(seed)
    b = base[rng.integers(0, len(base), size=(BOOTSTRAP, len(base)))].mean(axis=1)
    w = new[rng.integers(0, len(new), size=(BOOTSTRAP, len(new)))].mean(axis=1)
    d = w - b
    tail = (1.0 - level) / 2.0 * 100.0
    lo, hi = np.percentile(d, [tail, 100.0 - tail])
    return float(lo), float(hi)


def compare_samples(
    base: F64, new: F64, *, alpha: float = ALPHA, interval: bool = True
) -> Significance:
    """The test, the noise floor and (``interval``) the bootstrap interval of one metric."""
    base = np.asarray(base, dtype=np.float64)
    new = np.asarray(new, dtype=np.float64)
    sig = compare_rows(base[None, :], new[None, :], alpha=alpha)[0]
    if interval and sig.p_value is not None:
        lo, hi = bootstrap_ci(base, new)
        sig = dataclasses.replace(sig, ci_low=lo, ci_high=hi)
    return sig


def _robust_sd_rows(x: F64) -> F64:
    if x.shape[1] < 2:
        return np.zeros(x.shape[0])
    med = np.median(x, axis=1)
    out: F64 = MAD_SCALE * np.median(np.abs(x - med[:, None]), axis=1)
    return out


def compare_rows(base: F64, new: F64, *, alpha: float = ALPHA) -> list[Significance]:
    """``compare_samples`` without the interval for K metrics at once: (K, n) vs (K, m)."""
    k, n = base.shape
    m = new.shape[1]
    noise = np.maximum(_robust_sd_rows(base), _robust_sd_rows(new))
    dmed = np.median(new, axis=1) - np.median(base, axis=1) if n and m else np.zeros(k)
    if min(n, m) < MIN_STEPS:
        return [
            Significance(n, m, "none", None, None, None, float(noise[i]), float(dmed[i]), None)
            for i in range(k)
        ]
    if 2.0 / math.comb(n + m, n) < alpha:
        test, p = "mann-whitney", mann_whitney_rows(base, new)
    else:  # too few steps for the rank test to ever reject; rows are few here
        test, p = "welch-t", np.array([welch(base[i], new[i]) for i in range(k)])
    significant = (p < alpha) & (np.abs(dmed) > noise)
    return [
        Significance(
            n, m, test, float(p[i]), None, None, float(noise[i]), float(dmed[i]),
            bool(significant[i]),
        )
        for i in range(k)
    ]


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
