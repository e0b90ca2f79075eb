"""Integer keys to groups: ``np.unique(keys, return_inverse=True)`` without its sort when
the keys span a small range.

Most group keys in stepscope are string-table ids (operator and kernel names, stacks) or
small packed combinations of them, so they lie in a range not much wider than their
count. There a table of the range gives the sorted distinct keys and each key's rank in
two linear passes, where ``np.unique`` sorts every key (~0.1 s per million): at 1 GB the
report grouped ~1.3 M host operators this way twice. The result is the same arrays
``np.unique`` returns, so callers need not know which path ran.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]

# the table costs 9 bytes per value of the range: use it when the range is at most this
# many times the number of keys (or small in any case)
RANGE_PER_KEY = 4
SMALL_RANGE = 1 << 16


def unique_inverse(keys: npt.NDArray[np.integer]) -> tuple[npt.NDArray[np.integer], I64]:
    """``np.unique(keys, return_inverse=True)`` for a 1-D integer array: the sorted
    distinct keys (in the keys' dtype) and, per key, the index of its value among them."""
    if keys.ndim != 1 or keys.dtype.kind not in "iu" or len(keys) == 0:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.reshape(-1).astype(np.int64, copy=False)
    low, high = int(keys.min()), int(keys.max())
    span = high - low + 1
    if span > max(RANGE_PER_KEY * len(keys), SMALL_RANGE) or high >= 1 << 63:
        uniq, inverse = np.unique(keys, return_inverse=True)
        return uniq, inverse.astype(np.int64, copy=False)
    offsets = keys.astype(np.int64) - low  # in int64: narrower types would wrap
    present = np.zeros(span, dtype=bool)
    present[offsets] = True
    values = np.flatnonzero(present)
    rank = np.cumsum(present, dtype=np.int64) - 1
    uniq = (values + low).astype(keys.dtype, copy=False)
    return uniq, rank[offsets]


def unique_pairs(major: npt.NDArray[np.integer], minor: npt.NDArray[np.integer]
                 ) -> tuple[I64, I64, I64]:
    """The distinct (major, minor) pairs in lexicographic order, as two arrays, and per
    pair its group's index: what ``np.unique`` over ``major * W + minor`` gives for any W
    wider than the minor values, without the product's sparse range. Each column is
    ranked on its own, then the ranks, whose range is at most the count of distinct
    majors times the count of distinct minors, are grouped."""
    major_u, major_r = unique_inverse(major)
    minor_u, minor_r = unique_inverse(minor)
    width = max(len(minor_u), 1)
    joint, inverse = unique_inverse(major_r * width + minor_r)
    return (major_u[joint // width].astype(np.int64), minor_u[joint % width].astype(np.int64),
            inverse)
