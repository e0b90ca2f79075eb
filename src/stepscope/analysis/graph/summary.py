"""The critical path of every analysed step (or of one ``--window``), summarised: mean
length, share per category, the events that spend most time on it, and one step's path
in full (the step of median path length) for a timeline."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import index
from stepscope.analysis.graph.critical import (
    TOP_EVENTS,
    PathResult,
    TopRows,
    critical_path,
    shares,
)
from stepscope.analysis.graph.window import Window
from stepscope.grouping import unique_pairs
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class TopEvent:
    name: str
    kind: str
    category: str
    on_path_ns: float  # mean per window
    occurrences: int  # on the paths of all windows


@dataclass(frozen=True)
class CriticalPaths:
    windows: tuple[PathResult, ...]
    length_ns: float  # mean over windows
    span_ns: float
    by_category_ns: dict[str, float]  # mean over windows
    top: tuple[TopEvent, ...]
    example: PathResult  # the window of median path length

    @property
    def bound_by_pct(self) -> dict[str, float]:
        return shares({k: round(v) for k, v in self.by_category_ns.items()})


def critical_paths(trace: Trace, links: Links, windows: list[Window]) -> CriticalPaths | None:
    """HTA's critical path per window (one loop iteration per window, each vectorised).
    Windows holding nothing the graph models (e.g. only collective ranges on a CPU trace)
    have no path and are left out; None when no window has one (never a 0 µs path). The
    windows' events are summed as columns; only the example window's become objects and
    bands."""
    if not windows:
        return None
    ix = index(trace, links)
    results = tuple(r for r in (critical_path(trace, links, w, mode="hta", ix=ix,
                                              with_events=False)
                                for w in windows) if r.length_ns > 0)
    if not results:
        return None
    n = len(results)
    by = {k: sum(r.by_category_ns.get(k, 0) for r in results) / n for k in K.CATEGORIES}
    ordered = sorted(results, key=lambda r: r.length_ns)
    ex = ordered[len(ordered) // 2]
    # the window shown in full: solved again with its events and bands (one window of n)
    example = critical_path(trace, links, ex.window, mode="hta", ix=ix)
    return CriticalPaths(
        windows=results,
        length_ns=sum(r.length_ns for r in results) / n,
        span_ns=sum(r.span_ns for r in results) / n,
        by_category_ns=by,
        top=_top(trace, [r.top for r in results if r.top is not None], n),
        example=example,
    )


def _top(trace: Trace, tops: list[TopRows], n: int) -> tuple[TopEvent, ...]:
    """The events of every window's path summed by (name, kind, category): the TOP_EVENTS
    with most time, as a mean per window, and how many path listings they appear in."""
    if not tops:
        return ()
    fam = np.concatenate([t.fam for t in tops]).astype(np.int64)
    row = np.concatenate([t.row for t in tops])
    on = np.concatenate([t.on_path for t in tops])
    cat = np.concatenate([t.cat for t in tops]).astype(np.int64)
    if len(row) == 0:
        return ()
    name = np.empty(len(row), dtype=np.int64)
    kind = np.empty(len(row), dtype=np.int64)  # index into K.EVENT_KINDS
    for f, table in ((K.HOST, trace.host), (K.RUNTIME, trace.runtime), (K.DEVICE, trace.device)):
        m = fam == f
        name[m] = table.name[row[m]]
        kind[m] = K.DEVICE + trace.device.kind[row[m]] if f == K.DEVICE else f
    # distinct (name, kind, category) in np.unique(axis=1)'s order: kind and category are
    # small codes, packed into one minor key (offset from their least, so order is kept)
    c0, span = int(cat.min()), int(cat.max() - cat.min()) + 1
    names_u, kind_cat, inv = unique_pairs(name, kind * span + (cat - c0))
    keys = np.stack((names_u, kind_cat // span, kind_cat % span + c0))
    total = np.bincount(inv, weights=on.astype(np.float64), minlength=keys.shape[1])
    occ = np.bincount(inv, minlength=keys.shape[1])
    first = np.full(keys.shape[1], len(inv), dtype=np.int64)
    np.minimum.at(first, inv, np.arange(len(inv)))
    best = np.lexsort((first, -total))[:TOP_EVENTS]  # ties: in order of first listing
    return tuple(TopEvent(trace.name(int(keys[0, k])), K.EVENT_KINDS[int(keys[1, k])],
                          K.CATEGORIES[int(keys[2, k])], float(total[k]) / n, int(occ[k]))
                 for k in best.tolist())
