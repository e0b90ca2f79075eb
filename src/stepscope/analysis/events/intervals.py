"""Vectorised interval arithmetic over int64 nanosecond [start, end) ranges.

A *union* is a pair of sorted, disjoint, non-empty interval arrays. Everything here is
numpy over sorted arrays: no Python loop per interval.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.native import nest_native

I64 = npt.NDArray[np.int64]
Union = tuple[I64, I64]

EMPTY: Union = (np.empty(0, np.int64), np.empty(0, np.int64))


def union(starts: I64, ends: I64) -> Union:
    """Merge possibly overlapping intervals into a union (touching intervals merge)."""
    keep = ends > starts
    s, e = starts[keep], ends[keep]
    if len(s) == 0:
        return EMPTY
    if not bool(np.all(s[:-1] <= s[1:])):  # event tables arrive sorted: skip the sort
        order = np.argsort(s, kind="stable")
        s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > run_end[:-1]
    first = np.flatnonzero(new_group)
    last = np.append(first[1:] - 1, len(s) - 1)
    return s[first], run_end[last]


def length(u: Union) -> int:
    return int((u[1] - u[0]).sum())


def cumulative(u: Union, t: I64) -> I64:
    """For each time in ``t``: total length of ``u`` before that time."""
    s, e = u
    if len(s) == 0:
        return np.zeros(len(t), dtype=np.int64)
    prefix = np.concatenate(([0], np.cumsum(e - s)))
    k = np.searchsorted(s, t, side="right") - 1
    inside = np.where(k >= 0, np.minimum(t, e[np.maximum(k, 0)]) - s[np.maximum(k, 0)], 0)
    return np.where(k >= 0, prefix[np.maximum(k, 0)] + np.maximum(inside, 0), 0)


def measure_in(u: Union, lo: I64, hi: I64) -> I64:
    """Length of ``u`` inside each window [lo_i, hi_i)."""
    out: I64 = np.maximum(cumulative(u, hi) - cumulative(u, lo), 0)
    return out


def _sweep(a: Union, b: Union, keep_a_only: bool) -> Union:
    """Walk the edges of both unions in time order, keeping a∩b or a−b."""
    edges = np.concatenate((a[0], a[1], b[0], b[1]))
    na, nb = len(a[0]), len(b[0])
    delta_a = np.concatenate(
        (np.ones(na, np.int8), -np.ones(na, np.int8), np.zeros(2 * nb, np.int8))
    )
    delta_b = np.concatenate(
        (np.zeros(2 * na, np.int8), np.ones(nb, np.int8), -np.ones(nb, np.int8))
    )
    order = np.argsort(edges, kind="stable")
    edges = edges[order]
    in_a = np.cumsum(delta_a[order]) > 0
    in_b = np.cumsum(delta_b[order]) > 0
    inside = in_a & (~in_b if keep_a_only else in_b)
    # Zero-length segments between tied edges carry transient states; union() drops them.
    return union(edges[:-1][inside[:-1]], edges[1:][inside[:-1]])


def intersect(a: Union, b: Union) -> Union:
    """Intersection of two unions."""
    if len(a[0]) == 0 or len(b[0]) == 0:
        return EMPTY
    return _sweep(a, b, keep_a_only=False)


def subtract(a: Union, b: Union) -> Union:
    """Parts of ``a`` not covered by ``b``."""
    if len(a[0]) == 0 or len(b[0]) == 0:
        return a
    return _sweep(a, b, keep_a_only=True)


def merge(a: Union, b: Union) -> Union:
    return union(np.concatenate((a[0], b[0])), np.concatenate((a[1], b[1])))


def clip(u: Union, lo: int, hi: int) -> Union:
    s = np.maximum(u[0], lo)
    e = np.minimum(u[1], hi)
    keep = e > s
    return s[keep], e[keep]


def within_ranges(range_start: I64, range_end: I64, range_thread: npt.NDArray[np.integer[Any]],
                  start: I64, end: I64,
                  thread: npt.NDArray[np.integer[Any]]) -> npt.NDArray[np.bool_]:
    """Whether each [start, end) lies inside one of the ranges on its own thread: it starts
    at or after a range's start and ends by the furthest end of the ranges started so far
    on that thread (nested or overlapping ranges count as one). One pass per thread that
    has ranges (a few), numpy within it."""
    out = np.zeros(len(start), dtype=bool)
    for tid in np.unique(range_thread).tolist():
        mine = range_thread == tid
        order = np.argsort(range_start[mine], kind="stable")
        starts, reach = range_start[mine][order], np.maximum.accumulate(range_end[mine][order])
        rows = np.flatnonzero(thread == tid)
        k = np.searchsorted(starts, start[rows], side="right") - 1
        out[rows] = (k >= 0) & (end[rows] <= reach[np.maximum(k, 0)])
    return out


def nest_sorted(start: I64, end: I64) -> tuple[I64, I64]:
    """Depth of each range and position of its parent (the innermost range containing its
    start; -1 at the top), for ranges of one thread sorted by start asc, end desc. The
    native pass (nest.c) gives the same in one pass where it is built."""
    native = nest_native(start, end)
    if native is not None:
        return native
    pos = np.arange(len(start))
    # ranges open at start_i are its ancestors: depth = i - #(ranges ended by start_i)
    # ends come nearly sorted (a thread's ranges end mostly in start order): timsort
    # ("stable") runs through them about 10x faster than the default introsort
    closed = np.searchsorted(np.sort(end, kind="stable"), start, side="right")
    # Zero-length ranges at start_i sort after i (end desc) yet their end <= start_i
    # was counted as closed: remove those at positions >= i.
    zero_before = np.concatenate(([0], np.cumsum(end == start)))
    group_end = np.searchsorted(start, start, side="right")
    closed -= zero_before[group_end] - zero_before[pos]
    d = np.maximum(pos - closed, 0)
    up = np.full(len(start), -1, dtype=np.int64)
    top = int(d.max()) if len(d) else 0
    # positions grouped by depth once (a stable radix sort: ascending within a level), not
    # one scan of the whole thread per level
    by_depth = np.argsort(d.astype(np.int16) if top < (1 << 15) else d, kind="stable")
    bounds = np.searchsorted(d[by_depth], np.arange(top + 2))
    for level in range(1, top + 1):
        upper = by_depth[bounds[level - 1]:bounds[level]]
        lower = by_depth[bounds[level]:bounds[level + 1]]
        if len(upper) == 0 or len(lower) == 0:
            continue
        k = np.searchsorted(upper, lower, side="left") - 1
        ok = k >= 0
        up[lower[ok]] = upper[k[ok]]
    return d, up
