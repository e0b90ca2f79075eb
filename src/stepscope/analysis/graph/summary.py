"""The critical path of every analysed step (or of one ``--window``), summarised: mean
length, share per category, the events that spend most time on it, and one step's path
in full (the step of median path length) for a timeline."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import index
from stepscope.analysis.graph.critical import TOP_EVENTS, PathResult, critical_path, shares
from stepscope.analysis.graph.window import Window
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
    have no path and are left out; None when no window has one (never a 0 µs path)."""
    if not windows:
        return None
    ix = index(trace, links)
    results = tuple(r for r in (critical_path(trace, links, w, mode="hta", ix=ix)
                                for w in windows) if r.length_ns > 0)
    if not results:
        return None
    n = len(results)
    by = {k: sum(r.by_category_ns.get(k, 0) for r in results) / n for k in K.CATEGORIES}
    acc: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for r in results:
        for e in r.events:
            row = acc[(e.name, e.kind, e.category)]
            row[0] += e.on_path_ns
            row[1] += 1
    top = sorted(acc.items(), key=lambda kv: -kv[1][0])[:TOP_EVENTS]
    ordered = sorted(results, key=lambda r: r.length_ns)
    return CriticalPaths(
        windows=results,
        length_ns=sum(r.length_ns for r in results) / n,
        span_ns=sum(r.span_ns for r in results) / n,
        by_category_ns=by,
        top=tuple(TopEvent(k[0], k[1], k[2], v[0] / n, int(v[1])) for k, v in top),
        example=ordered[len(ordered) // 2],
    )
