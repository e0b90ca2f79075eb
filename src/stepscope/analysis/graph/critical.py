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
from stepscope.model.trace import Trace

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
class TopRows:
    """A path's events with most time on it, as columns (``PATH_EVENTS`` at most, largest
    first): the graph family and table row of each, its time on the path, its category."""

    fam: npt.NDArray[np.int8]
    row: I64
    on_path: I64
    cat: npt.NDArray[np.int8]


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
    top: TopRows | None = None  # the same events as columns (``events`` may be left empty)
    bands: Bands | None = None  # every event of the path, merged for drawing


def path_top(g: Graph, sol: Solution, end_node: int, w: I64, xw: I64,
             with_events: bool = True) -> tuple[dict[str, int], TopRows | None, int, I64]:
    """Categories of the path ending at ``end_node``, the edges walked and, with
    ``with_events``, its events with most time on it and every event with path time."""
    pos, cross = backtrack(sol, g.order, g.xs, end_node)
    all_cat = np.concatenate((g.cat_at(pos), g.xcat_at(cross))).astype(np.int64)
    all_w = np.concatenate((w[pos], xw[cross])).astype(np.int64)
    keep = all_cat >= 0
    by = np.bincount(all_cat[keep], weights=all_w[keep], minlength=len(K.CATEGORIES))
    by_category = {k: int(v) for k, v in zip(K.CATEGORIES, by.round().tolist(), strict=True)}
    if not with_events:
        return by_category, None, len(pos) + len(cross), np.empty(0, dtype=np.int64)
    all_o = np.concatenate((g.owner[pos], g.xowner[cross])).astype(np.int64)
    has = (all_o >= 0) & keep
    per_ev = np.bincount(all_o[has], weights=all_w[has], minlength=g.events)
    touched = np.flatnonzero(per_ev > 0)
    top = touched[np.argsort(-per_ev[touched], kind="stable")][:PATH_EVENTS]
    rows = TopRows(g.fam[top], g.row[top], per_ev[top].astype(np.int64), g.ev_cat[top])
    return by_category, rows, len(pos) + len(cross), touched.astype(np.int64)


def path_breakdown(trace: Trace, g: Graph, sol: Solution, end_node: int, w: I64, xw: I64,
                   lead_ns: int = 0, with_events: bool = True
                   ) -> tuple[dict[str, int], list[PathEvent], int]:
    """Categories and events of the path ending at ``end_node`` (``lead_ns``: time before
    the path's first node, counted as ``other``; ``with_events=False``: categories only)."""
    by_category, rows, edges, _ = path_top(g, sol, end_node, w, xw, with_events)
    if lead_ns > 0:
        by_category["other"] = lead_ns
    return by_category, (path_events(trace, rows) if rows is not None else []), edges


def path_events(trace: Trace, rows: TopRows) -> list[PathEvent]:
    """One object per listed event (at most PATH_EVENTS), columns gathered per table."""
    n = len(rows.row)
    out: list[PathEvent | None] = [None] * n
    strings = trace.strings
    on, cat = rows.on_path.tolist(), [K.CATEGORIES[c] for c in rows.cat.tolist()]
    dev = trace.device
    sel = np.flatnonzero(rows.fam == K.DEVICE)
    r = rows.row[sel]
    kinds = [K.EVENT_KINDS[K.DEVICE + k] for k in dev.kind[r].tolist()]
    for j, kd, nm, t, d, st in zip(sel.tolist(), kinds, dev.name[r].tolist(),
                                   dev.ts[r].tolist(), dev.dur[r].tolist(),
                                   dev.stream[r].tolist(), strict=True):
        out[j] = PathEvent(strings[nm] if nm >= 0 else "", kd, t, d, st, None, on[j], cat[j])
    for f, table in ((K.HOST, trace.host), (K.RUNTIME, trace.runtime)):
        kind = K.EVENT_KINDS[f]
        sel = np.flatnonzero(rows.fam == f)
        r = rows.row[sel]
        for j, nm, t, d, th in zip(sel.tolist(), table.name[r].tolist(), table.ts[r].tolist(),
                                   table.dur[r].tolist(), table.tid[r].tolist(), strict=True):
            out[j] = PathEvent(strings[nm] if nm >= 0 else "", kind, t, d, None,
                               strings[th] if th >= 0 else "", on[j], cat[j])
    return [e for e in out if e is not None]


def critical_path(trace: Trace, links: Links, window: Window, mode: str = "hta",
                  ix: Index | None = None, with_events: bool = True) -> PathResult:
    """HTA's longest path: it may start at any node (every node anchored at 0).
    ``with_events=False``: the path's events as columns only (``top``), no objects and no
    bands."""
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
    by, rows, edges, touched = path_top(g, sol, end, g.w, g.xw)
    events = tuple(path_events(trace, rows)) if with_events and rows is not None else ()
    # events start inside the window: node times are >= 0 from its start
    span = max(window.end - window.start, int(g.ts.max()))  # Python ints: no wrap
    bands = path_bands(trace, g, touched, span) if with_events else None
    return PathResult(window, int(t[end]), span, by, events, edges, sol.rounds, rows, bands)


def shares(by_category_ns: dict[str, int]) -> dict[str, float]:
    """Percent of the path per category (the seven keys; they sum to 100 when not empty)."""
    total = sum(by_category_ns.get(k, 0) for k in K.CATEGORIES)
    return {k: (100.0 * by_category_ns.get(k, 0) / total if total else 0.0)
            for k in K.CATEGORIES}
