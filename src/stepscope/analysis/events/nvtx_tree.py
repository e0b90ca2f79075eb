"""Nesting of NVTX push/pop ranges per thread: level and number of direct children.

Vectorised over all ranges: sorted by (thread, start, longest first), a range's level is
the number of earlier ranges of its thread that have not ended when it starts; its parent
is the closest earlier range of the same thread one level up. Start/end ranges are not
nested (level 0, no children), as in nsys' nvtx_pushpop reports.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import NVTX_PUSHPOP, Trace

I64 = npt.NDArray[np.int64]


def nvtx_levels(trace: Trace) -> tuple[I64, I64]:
    """(level, number of direct children) of each range of ``trace.nvtx``."""
    nv = trace.nvtx
    n = len(nv)
    level = np.zeros(n, np.int64)
    children = np.zeros(n, np.int64)
    idx = np.flatnonzero(nv.style == NVTX_PUSHPOP)
    if len(idx) < 2:
        return level, children
    thread = nv.pid[idx].astype(np.int64) * (1 << 31) + nv.tid[idx]
    _, th = np.unique(thread, return_inverse=True)
    th = th.reshape(-1).astype(np.int64)
    ts, end = nv.ts[idx], nv.ts[idx] + nv.dur[idx]
    order = np.lexsort((-end, ts, th))
    idx, th, ts, end = idx[order], th[order], ts[order], end[order]
    m = len(idx)
    tmin = int(ts.min())
    span = int(max(end.max(), ts.max())) - tmin + 2
    first = np.searchsorted(th, th, side="left")  # first position of each thread
    ends_sorted = np.sort(th * span + (end - tmin))
    ended = np.searchsorted(ends_sorted, th * span + (ts - tmin), side="right") - \
        np.searchsorted(ends_sorted, th * span, side="left")
    lvl = np.maximum(np.arange(m) - first - ended, 0)
    # parent: the last earlier range of the same thread one level up
    keys = lvl * (m + 1) + np.arange(m)
    korder = np.argsort(keys, kind="stable")
    sorted_keys = keys[korder]
    pos = np.searchsorted(sorted_keys, (lvl - 1) * (m + 1) + np.arange(m), side="left") - 1
    ok = (lvl > 0) & (pos >= 0)
    cand = np.where(ok, korder[np.maximum(pos, 0)], -1)
    ok &= (cand >= 0) & (lvl[np.maximum(cand, 0)] == lvl - 1) & (th[np.maximum(cand, 0)] == th)
    kids = np.bincount(cand[ok], minlength=m)
    level[idx] = lvl
    children[idx] = kids
    return level, children
