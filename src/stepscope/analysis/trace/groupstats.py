"""Per-group duration statistics (total, count, mean, median, min, max, stddev), vectorised.

The figures ``nsys stats`` prints for every summary report: the median of an even count is
the mean of the two middle values, the standard deviation is the sample one (n - 1) and
0 for a single instance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class GroupStats:
    keys: npt.NDArray[np.int64]  # one per group, ascending
    count: npt.NDArray[np.int64]
    total: npt.NDArray[np.int64]
    mean: npt.NDArray[np.float64]
    median: npt.NDArray[np.float64]
    minimum: npt.NDArray[np.int64]
    maximum: npt.NDArray[np.int64]
    stddev: npt.NDArray[np.float64]


def group_stats(keys: npt.NDArray[np.int64], values: npt.NDArray[np.int64]) -> GroupStats:
    keys = np.asarray(keys, dtype=np.int64)
    values = np.asarray(values, dtype=np.int64)
    if len(keys) == 0:
        e = np.empty(0, np.int64)
        f = np.empty(0, np.float64)
        return GroupStats(e, e, e, f, f, e, e, f)
    order = np.lexsort((values, keys))
    k, v = keys[order], values[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    count = np.diff(np.r_[starts, len(k)]).astype(np.int64)
    total = np.add.reduceat(v, starts)
    mean = total / count
    lo = starts + (count - 1) // 2
    hi = starts + count // 2
    median = (v[lo].astype(np.float64) + v[hi]) / 2.0
    dev = v - np.repeat(mean, count)
    ss = np.add.reduceat(dev * dev, starts)
    stddev = np.where(count > 1, np.sqrt(ss / np.maximum(count - 1, 1)), 0.0)
    return GroupStats(
        keys=k[starts], count=count, total=total, mean=mean, median=median,
        minimum=v[starts], maximum=v[starts + count - 1], stddev=stddev,
    )
