"""Collectives that run on a host worker thread (gloo, and any backend whose work the trace
records as host ranges): their dependencies on the thread that issued them, for the graph of
a run of ranks (analysis/graph/ranks.py; docs/whatif.md, "A run of ranks").

With gloo, ``c10d::allreduce_`` (on the training thread) only queues the work; the backend's
own range (``gloo:all_reduce``) runs on one of the process group's worker threads, and the
training thread blocks in ``work.wait()``, which the profiler does not record: the wait shows
as a gap on the issuing thread that ends just after the work's range. Two edges model it:

- issue: the issuing collective op's start -> the work's start (the recorded delay when the
  worker thread was idle at the issue, else at most the median of those delays: the rest was
  the previous work's time, kept by the worker's chain), and the worker chain's gap before
  the work becomes 0 when the issue explains it;
- wait: the work's end -> the next start on the issuing thread, when that thread was idle
  across the work's end and resumed within ``WAKE_MAX_NS`` of it; the thread's gap before
  that start keeps at most this wake-up time, so it resumes when the collective ends.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import numpy.typing as npt

from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import Graph

I64 = npt.NDArray[np.int64]

# work.wait() returns within ~0.1 ms of gloo's range end on the committed captures (0.12 ms
# on tests/data/whatif/runs/ddp-25); a thread idle for longer after the work ended was
# waiting for something the trace does not show, so no wait edge is drawn.
WAKE_MAX_NS = 1_000_000
_KEY = 1 << 42  # per chain segment: node times stay below this (the solver refuses longer)


def wire(g: Graph, work: I64) -> Graph:
    """``g`` with the issue and wait edges of the host collective work events ``work``
    (event ids of ``g``)."""
    if len(work) == 0:
        return g
    m = len(g.order)
    pos = np.empty(2 * g.events, dtype=np.int64)
    pos[g.order] = np.arange(m)
    is_work = np.zeros(g.events, dtype=bool)
    is_work[work] = True
    cand = np.flatnonzero((g.fam == K.HOST) & (g.ev_cat == K.COMMUNICATION) & ~is_work)
    if len(cand) == 0:
        return g
    cand = cand[np.argsort(g.ts[2 * cand], kind="stable")]
    w_start, w_end = g.ts[2 * work], g.ts[2 * work + 1]
    k = np.searchsorted(g.ts[2 * cand], w_start, side="right") - 1
    ok = k >= 0
    work, w_start, w_end, issuer = work[ok], w_start[ok], w_end[ok], cand[k[ok]]
    i_start = g.ts[2 * issuer]
    # issue edges
    ps = pos[2 * work]
    prev_t = np.where(g.first[ps], np.iinfo(np.int64).min, g.ts[g.order[np.maximum(ps - 1, 0)]])
    idle = prev_t <= i_start
    delay = w_start - i_start
    typical = int(np.median(delay[idle])) if idle.any() else 0
    iw = np.where(idle, delay, np.minimum(delay, typical))
    w, kind = g.w.copy(), g.kind.copy()
    chained = idle & ~g.first[ps]
    w[ps[chained]] = 0
    kind[ps[chained]] = K.ORDER
    # wait edges: the first node of the issuer's chain at or after the work's end
    seg = np.cumsum(g.first) - 1
    key = seg * _KEY + np.clip(g.ts[g.order], 0, _KEY - 1)
    i_seg = seg[pos[2 * issuer]]
    p = np.searchsorted(key, i_seg * _KEY + np.clip(w_end, 0, _KEY - 1), side="left")
    pc = np.minimum(p, m - 1)
    wake = g.ts[g.order[pc]] - w_end
    waits = ((p < m) & (seg[pc] == i_seg) & (g.order[pc] % 2 == 0) & ~g.first[pc]
             & (g.kind[pc] == K.DEPENDENCY) & (wake <= WAKE_MAX_NS))
    pw = pc[waits]
    np.minimum.at(w, pw, wake[waits])
    xs = np.concatenate((g.xs, 2 * issuer, 2 * work[waits] + 1))
    xd = np.concatenate((g.xd, 2 * work, g.order[pw]))
    xw = np.concatenate((g.xw, np.maximum(iw, 0), wake[waits]))
    xk = np.concatenate((g.xkind, np.full(len(work), K.ISSUE, np.int8),
                         np.full(len(pw), K.SYNC, np.int8)))
    xo = np.concatenate((g.xowner, work, g.order[pw] // 2))
    return dataclasses.replace(g, w=w, kind=kind, xs=xs, xd=xd, xw=xw, xkind=xk, xowner=xo)
