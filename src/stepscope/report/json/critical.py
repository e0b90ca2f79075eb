"""JSON of the critical path (``critical_path``) and of what-if replays
(``stepscope.whatif/1``: the ``whatif`` command and the report's ``whatif`` section)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.bands import Bands
from stepscope.analysis.graph.critical import PathEvent
from stepscope.analysis.graph.ranks import RunPath, RunReplay, RunTiming
from stepscope.analysis.graph.summary import CriticalPaths
from stepscope.analysis.graph.whatif import Timing
from stepscope.report.json.rounding import us as _us

if TYPE_CHECKING:
    from stepscope.advice.replay import Combined

WHATIF_SCHEMA = "stepscope.whatif/1"


def _event(e: PathEvent) -> dict[str, Any]:
    return {"name": e.name, "kind": e.kind, "ts_us": _us(e.ts_ns), "dur_us": _us(e.dur_ns),
            "stream": e.stream, "thread": e.thread, "on_path_us": _us(e.on_path_ns),
            "category": e.category}


def critical_json(cp: CriticalPaths | None) -> dict[str, Any] | None:
    if cp is None:
        return None
    ex = cp.example
    return {
        "definition": "HTA 0.5.0 critical path (docs/metrics.md, Critical path)",
        "windows": len(cp.windows),
        "length_us": _us(cp.length_ns),
        "window_us": _us(cp.span_ns),
        "bound_by_pct": {k: round(v, 2) for k, v in cp.bound_by_pct.items()},
        "by_category_us": {k: _us(v) for k, v in cp.by_category_ns.items()},
        "top_events": [{"name": t.name, "kind": t.kind, "category": t.category,
                        "on_path_us": _us(t.on_path_ns), "occurrences": t.occurrences}
                       for t in cp.top],
        "per_window": [{"window": r.window.label, "start_us": _us(r.window.start),
                        "length_us": _us(r.length_ns), "window_us": _us(r.span_ns)}
                       for r in cp.windows],
        "path": {"window": ex.window.label, "start_us": _us(ex.window.start),
                 "end_us": _us(ex.window.start + ex.span_ns), "length_us": _us(ex.length_ns),
                 "events": [_event(e) for e in ex.events], "bands": bands_json(ex.bands)},
    }


def bands_json(b: Bands | None) -> dict[str, Any] | None:
    """Every path event, merged per lane and category (analysis/graph/bands.py), as columns:
    µs from the window's start, category as an index into ``categories``."""
    if b is None:
        return None
    return {"events": b.events, "lanes": list(b.lanes), "categories": list(K.CATEGORIES),
            "lane": b.lane.tolist(), "cat": b.cat.tolist(),
            "start_us": [_us(v) for v in b.start_ns.tolist()],
            "dur_us": [_us(v) for v in (b.end_ns - b.start_ns).tolist()]}


def timing_json(t: Timing) -> dict[str, Any]:
    return {"step_us": _us(t.step_ns),
            "by_category_us": {k: _us(v) for k, v in t.by_category_ns.items()}}


def whatif_json(before: Timing, after: Timing, applied: list[dict[str, Any]],
                windows: list[str]) -> dict[str, Any]:
    saving = before.step_ns - after.step_ns
    return {
        "schema": WHATIF_SCHEMA,
        "windows": windows,
        "before": timing_json(before),
        "after": timing_json(after),
        "saving_us": _us(saving),
        "saving_pct": round(100.0 * saving / before.step_ns, 2) if before.step_ns else 0.0,
        "applied": applied,
    }


def combined_json(c: Combined | None, windows: list[str]) -> dict[str, Any] | None:
    """The report's ``whatif``: every replayable finding's fix applied together."""
    if c is None:
        return None
    from stepscope.analysis.graph.fixes import RULE_TRANSFORMS

    applied = [{"transform": spec, "rules": [f for f in c.findings if RULE_TRANSFORMS[f] == spec],
                "events": n} for spec, n in zip(c.transforms, c.touched, strict=True)]
    return whatif_json(c.before, c.after, applied, windows)


RUN_PATH_EVENTS = 100  # events listed in the run's JSON, by time on the path


def run_timing_json(t: RunTiming) -> dict[str, Any]:
    return {"step_us": _us(t.step_ns), "slowest_rank": t.slowest_rank,
            "ranks": [{"rank": r.rank, "step_us": _us(r.step_ns), "steps": r.steps}
                      for r in t.ranks],
            "by_category_us": {k: _us(v) for k, v in t.by_category_ns.items()}}


def run_path_json(p: RunPath | None, note: str) -> dict[str, Any] | None:
    """The run report's ``critical_path``: the longest path across ranks."""
    if p is None:
        return {"note": note} if note else None
    return {
        "definition": "longest path of the run's dependency graph: every rank's replay graph, "
                      "collectives joined across ranks (docs/whatif.md, A run of ranks)",
        **run_timing_json(p.timing),
        "length_us": _us(p.length_ns),
        "end_rank": p.end_rank,
        "runs_through_rank": p.runs_through_rank,
        # a straggler only where collectives join the ranks (else each rank runs alone)
        "straggler": p.runs_through_rank if p.joined_calls else None,
        "by_rank_us": {str(r): _us(v) for r, v in p.by_rank_ns.items()},
        "waits": [{"collective": w.label, "rank": w.rank, "waited_on_rank": w.waited_on_rank,
                   "wait_us": _us(w.wait_ns)} for w in p.waits],
        "events": [{**_event(e.event), "rank": e.rank, "waited_on_rank": e.waited_on_rank}
                   for e in p.events[:RUN_PATH_EVENTS]],
        "joined_collectives": p.joined_calls,
        "clock": {str(r): {"offset_us": _us(p.clock_offsets_ns[r]), "source": p.clock_source[r]}
                  for r in p.clock_offsets_ns},
        "note": note,
    }


def run_whatif_json(r: RunReplay, applied: list[dict[str, Any]]) -> dict[str, Any]:
    """``stepscope whatif DIR``: every rank replayed; the run's step is the slowest rank's."""
    saving = r.before.step_ns - r.after.step_ns
    return {
        "schema": WHATIF_SCHEMA,
        "windows": [f"rank {s.rank}: {s.steps} steps" for s in r.before.ranks],
        "before": run_timing_json(r.before),
        "after": run_timing_json(r.after),
        "saving_us": _us(saving),
        "saving_pct": round(100.0 * saving / r.before.step_ns, 2) if r.before.step_ns else 0.0,
        "applied": applied,
    }
