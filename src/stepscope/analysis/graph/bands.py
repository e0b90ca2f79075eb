"""Every event of a critical path, in a compact form for drawing: per lane (host thread or
stream) and category, the events' time ranges merged where they touch or are closer than
1/4000 of the window (finer than a pixel of any screen), so a long step's path of tens of
thousands of events draws whole in a few thousand bands at most."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import Graph
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]

RESOLUTION = 4000  # bands closer than window / RESOLUTION merge


@dataclass(frozen=True)
class Bands:
    lanes: tuple[str, ...]  # "thread T" (host, as the trace writes T) or "stream S"
    lane: I64  # per band, index into lanes
    start_ns: I64  # relative to the window's start
    end_ns: I64
    cat: I8  # kinds.CATEGORIES index
    events: int  # the path's events they draw


def path_bands(trace: Trace, g: Graph, touched: I64, window_ns: int) -> Bands:
    """The ranges of the path's events ``touched`` (event ids of ``g``), merged per lane and
    category; ordered by start, longer first (a range before those nested in it)."""
    fam = g.fam[touched]
    row = g.row[touched]
    host = fam != K.DEVICE
    # lane key: a thread's string id (host and runtime tables share the string table), or
    # a stream number offset past every string id
    tid = np.zeros(len(touched), dtype=np.int64)
    is_h = fam == K.HOST
    is_r = fam == K.RUNTIME
    tid[is_h] = trace.host.tid[row[is_h]]
    tid[is_r] = trace.runtime.tid[row[is_r]]
    stream = trace.device.stream[row[~host]].astype(np.int64)
    base = int(tid.max(initial=0)) + 1
    key = tid.copy()
    key[~host] = base + stream - int(stream.min(initial=0))
    keys, lane = np.unique(key, return_inverse=True)
    first = np.searchsorted(key[np.argsort(key, kind="stable")], keys)
    any_of = np.argsort(key, kind="stable")[first]
    lanes = tuple(f"thread {trace.name(int(tid[i]))}" if host[i] else
                  f"stream {int(trace.device.stream[row[i]])}" for i in any_of.tolist())
    start = g.ts[2 * touched]
    end = g.ts[2 * touched + 1]
    cat = g.ev_cat[touched].astype(np.int64)
    tol = max(1, window_ns // RESOLUTION)
    # runs of one lane and category whose ranges touch (within tol): a running maximum of
    # the end within each group (one accumulate per lane and category: a few dozen groups;
    # no offset trick, which overflows on timestamps near the int64 limit)
    group = lane.astype(np.int64) * len(K.CATEGORIES) + cat
    o = np.lexsort((-end, start, group))
    group, start, end = group[o], start[o], end[o]
    cuts = np.flatnonzero(group[1:] != group[:-1]) + 1
    reach = np.concatenate([np.maximum.accumulate(part) for part in np.split(end, cuts)]
                           ) if len(end) else end
    new = np.ones(len(o), dtype=bool)
    new[1:] = start[1:] - reach[:-1] > tol
    new[cuts] = True
    heads = np.flatnonzero(new)
    b_start = start[heads]
    b_end = np.maximum.reduceat(end, heads) if len(heads) else end[:0]
    b_group = group[heads]
    order = np.lexsort((-(b_end - b_start), b_start))
    return Bands(lanes, (b_group // len(K.CATEGORIES))[order].astype(np.int64),
                 b_start[order].astype(np.int64), b_end[order].astype(np.int64),
                 (b_group % len(K.CATEGORIES))[order].astype(np.int8), len(touched))
