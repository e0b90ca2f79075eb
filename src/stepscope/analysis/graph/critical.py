"""The critical path of a window: the longest path of its dependency graph (HTA 0.5.0's
definitions, docs/metrics.md "Critical path"), its time per category and its events."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
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
    span_ns: int  # the window's events, first start to last end
    by_category_ns: dict[str, int]
    events: tuple[PathEvent, ...]  # by time on the path, largest first (PATH_EVENTS)
    edges: int
    rounds: int


def path_breakdown(trace: Trace, g: Graph, sol: Solution, end_node: int, w: I64, xw: I64,
                   lead_ns: int = 0, with_events: bool = True
                   ) -> tuple[dict[str, int], list[PathEvent], int]:
    """Categories and events of the path ending at ``end_node`` (``lead_ns``: time before
    the path's first node, counted as ``other``; ``with_events=False``: categories only)."""
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
    if not with_events:
        return by_category, [], len(pos) + len(cross)
    has = (all_o >= 0) & keep
    per_ev = np.bincount(all_o[has], weights=all_w[has], minlength=g.events)
    touched = np.flatnonzero(per_ev > 0)
    top = touched[np.argsort(-per_ev[touched], kind="stable")][:PATH_EVENTS]
    events = path_events(trace, g, top, per_ev[top].astype(np.int64), g.ev_cat[top])
    return by_category, events, len(pos) + len(cross)


def path_events(trace: Trace, g: Graph, ids: I64, on_path: I64,
                cats: npt.NDArray[np.int8]) -> list[PathEvent]:
    """The events ``ids`` of ``g`` (at most PATH_EVENTS: one object each), their columns
    gathered per table at once."""
    out: list[PathEvent | None] = [None] * len(ids)
    strings = trace.strings
    on, cat = on_path.tolist(), [K.CATEGORIES[c] for c in cats.tolist()]
    fam = g.fam[ids]
    rows = g.row[ids]
    dev = trace.device
    sel = np.flatnonzero(fam == K.DEVICE)
    r = rows[sel]
    kinds = ["kernel" if k == DEV_KERNEL else "memcpy" if k == DEV_MEMCPY else "memset"
             for k in dev.kind[r].tolist()]
    for j, i, n, t, d, st in zip(sel.tolist(), range(len(sel)), dev.name[r].tolist(),
                                 dev.ts[r].tolist(), dev.dur[r].tolist(),
                                 dev.stream[r].tolist(), strict=True):
        out[j] = PathEvent(strings[n] if n >= 0 else "", kinds[i], t, d, st, None, on[j],
                           cat[j])
    for f, table, kind in ((K.HOST, trace.host, "cpu_op"), (K.RUNTIME, trace.runtime,
                                                            "runtime")):
        sel = np.flatnonzero(fam == f)
        r = rows[sel]
        for j, n, t, d, th in zip(sel.tolist(), table.name[r].tolist(), table.ts[r].tolist(),
                                  table.dur[r].tolist(), table.tid[r].tolist(), strict=True):
            out[j] = PathEvent(strings[n] if n >= 0 else "", kind, t, d, None,
                               strings[th] if th >= 0 else "", on[j], cat[j])
    return [e for e in out if e is not None]


def critical_path(trace: Trace, links: Links, window: Window, mode: str = "hta",
                  ix: Index | None = None) -> PathResult:
    """HTA's longest path: it may start at any node (every node anchored at 0)."""
    g = build(trace, links, window.start, window.end, mode, ix=ix)
    n = 2 * g.events
    if g.events == 0:
        return PathResult(window, 0, 0, {k: 0 for k in K.CATEGORIES}, (), 0, 0)
    cuts = g.ts[g.xd[g.xkind == K.SYNC]] + 1  # after each waiting call's end
    sol = longest_sliced(g.order, g.first, g.w, g.xs, g.xd, g.xw, np.zeros(n, dtype=np.int64),
                         g.ts, cuts)
    t = np.where(sol.t > NEG, sol.t, -1)
    end = int(np.argmax(t))
    by, events, edges = path_breakdown(trace, g, sol, end, g.w, g.xw)
    span = int(g.ts.max()) - int(g.ts.min())  # Python ints: no wrap on odd timestamps
    return PathResult(window, int(t[end]), span, by, tuple(events), edges, sol.rounds)


def shares(by_category_ns: dict[str, int]) -> dict[str, float]:
    """Percent of the path per category (the seven keys; they sum to 100 when not empty)."""
    total = sum(by_category_ns.get(k, 0) for k in K.CATEGORIES)
    return {k: (100.0 * by_category_ns.get(k, 0) / total if total else 0.0)
            for k in K.CATEGORIES}
