"""The critical path of a window: the longest path of its dependency graph (HTA 0.5.0's
definitions, docs/metrics.md "Critical path"), its time per category and its events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.bands import Bands, path_bands
from stepscope.analysis.graph.build import Graph, Index, build
from stepscope.analysis.graph.solve import NEG, Solution, backtrack, longest_sliced
from stepscope.analysis.graph.window import Window
from stepscope.model.trace import DEV_KERNEL, DEV_MEMCPY, Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

TOP_EVENTS = 10
PATH_EVENTS = 500  # events listed for a dashboard, by contribution


@dataclass(frozen=True)
class PathEvent:
    name: str
    kind: str  # cpu_op | runtime | kernel | memcpy | memset
    ts_ns: int  # absolute, as in the trace
    dur_ns: int
    stream: int | None  # device ops
    thread: str | None  # host events: the thread id as written
    on_path_ns: int  # time of the path attributed to the event
    category: str


@dataclass(frozen=True)
class PathResult:
    window: Window
    length_ns: int
    # the window's length: from its start to its end or to its last event's end, whichever
    # is later (device work launched in a step may end after its host range)
    span_ns: int
    by_category_ns: dict[str, int]
    events: tuple[PathEvent, ...]  # by time on the path, largest first (PATH_EVENTS)
    edges: int
    rounds: int
    bands: Bands | None = None  # every event of the path, merged for drawing


def path_breakdown(trace: Trace, g: Graph, sol: Solution, end_node: int, w: I64, xw: I64,
                   lead_ns: int = 0) -> tuple[dict[str, int], list[PathEvent], int, I64]:
    """Categories and events of the path ending at ``end_node`` (``lead_ns``: time before
    the path's first node, counted as ``other``), the edges walked and every event with
    path time."""
    pos, cross = backtrack(sol, g.order, g.xs, end_node)
    cat = g.cat[pos]
    weights = w[pos]
    owners = g.owner[pos]
    xc = g.xcat[cross]
    xwt = xw[cross]
    xo = g.xowner[cross]
    all_cat = np.concatenate((cat, xc)).astype(np.int64)
    all_w = np.concatenate((weights, xwt)).astype(np.int64)
    all_o = np.concatenate((owners, xo)).astype(np.int64)
    keep = all_cat >= 0
    by = np.bincount(all_cat[keep], weights=all_w[keep], minlength=len(K.CATEGORIES))
    by_category = {k: int(v) for k, v in zip(K.CATEGORIES, by.round().tolist(), strict=True)}
    if lead_ns > 0:
        by_category["other"] = lead_ns
    has = (all_o >= 0) & keep
    per_ev = np.bincount(all_o[has], weights=all_w[has], minlength=g.events)
    ev_cat = g.ev_cat.astype(np.int64)
    touched = np.flatnonzero(per_ev > 0)
    top = touched[np.argsort(-per_ev[touched], kind="stable")][:PATH_EVENTS]
    events = [_event(trace, g, int(e), int(per_ev[e]), int(ev_cat[e])) for e in top.tolist()]
    return by_category, events, len(pos) + len(cross), touched.astype(np.int64)


def _event(trace: Trace, g: Graph, e: int, on_path: int, cat: int) -> PathEvent:
    row = int(g.row[e])
    fam = int(g.fam[e])
    if fam == K.DEVICE:
        dev = trace.device
        k = int(dev.kind[row])
        kind = "kernel" if k == DEV_KERNEL else "memcpy" if k == DEV_MEMCPY else "memset"
        return PathEvent(trace.name(int(dev.name[row])), kind, int(dev.ts[row]),
                         int(dev.dur[row]), int(dev.stream[row]), None, on_path,
                         K.CATEGORIES[cat])
    table = trace.host if fam == K.HOST else trace.runtime
    return PathEvent(trace.name(int(table.name[row])), "cpu_op" if fam == K.HOST else "runtime",
                     int(table.ts[row]), int(table.dur[row]),
                     None, trace.name(int(table.tid[row])), on_path, K.CATEGORIES[cat])


def critical_path(trace: Trace, links: Links, window: Window, mode: str = "hta",
                  ix: Index | None = None) -> PathResult:
    """HTA's longest path: it may start at any node (every node anchored at 0)."""
    g = build(trace, links, window.start, window.end, mode, ix=ix)
    n = 2 * g.events
    if g.events == 0:
        return PathResult(window, 0, window.end - window.start, {k: 0 for k in K.CATEGORIES},
                          (), 0, 0)
    cuts = g.ts[g.xd[g.xkind == K.SYNC]] + 1  # after each waiting call's end
    sol = longest_sliced(g.order, g.first, g.w, g.xs, g.xd, g.xw, np.zeros(n, dtype=np.int64),
                         g.ts, cuts)
    t = np.where(sol.t > NEG, sol.t, -1)
    end = int(np.argmax(t))
    by, events, edges, touched = path_breakdown(trace, g, sol, end, g.w, g.xw)
    # events start inside the window: node times are >= 0 from its start
    span = max(window.end - window.start, int(g.ts.max()))  # Python ints: no wrap
    return PathResult(window, int(t[end]), span, by, tuple(events), edges, sol.rounds,
                      path_bands(trace, g, touched, span))


def shares(by_category_ns: dict[str, int]) -> dict[str, float]:
    """Percent of the path per category (the seven keys; they sum to 100 when not empty)."""
    total = sum(by_category_ns.get(k, 0) for k in K.CATEGORIES)
    return {k: (100.0 * by_category_ns.get(k, 0) / total if total else 0.0)
            for k in K.CATEGORIES}
