"""``stepscope report DIR`` on captures of one process: that process's findings, per capture.

Each capture (span) is analysed as ``stepscope report FILE`` analyses it, so a folder of a
process's captures finds what each file alone finds. A finding that several captures have
is shown once, as the capture with the largest saving saw it, and says in how many
captures it was found and what each saved.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from stepscope.advice.finding import Finding
from stepscope.errors import StepscopeError, TraceSourceError, one_line
from stepscope.model.run import Run
from stepscope.parallel.executor import map_ranks
from stepscope.parallel.tasks import RankFailure, RankTask
from stepscope.report.build import SCHEMA
from stepscope.report.folder import Layout
from stepscope.units import format_us


@dataclass(frozen=True)
class SpanResult:
    """What the run keeps of one capture's report (small: travels from a worker)."""

    path: str
    steps: int
    mean_step_us: float
    findings: tuple[Finding, ...]
    partial: bool


def report_span(task: RankTask) -> SpanResult | RankFailure:
    """One capture's full report, as ``stepscope report FILE`` (module-level: picklable)."""
    from stepscope.formats import load_trace
    from stepscope.report.build import build_report

    try:
        trace = load_trace(task.path, use_cache=task.use_cache,
                           storage_options=task.storage_options, workers=1)
        report = build_report(trace)
    except StepscopeError as exc:
        return RankFailure(task.path, one_line(str(exc)))
    steps = report.analyses.steps.steps
    mean = sum(s.duration for s in steps) / len(steps) / 1e3 if steps else 0.0
    meta = trace.meta
    return SpanResult(task.path, len(steps), mean, tuple(report.findings),
                      bool(meta.skipped) or bool(meta.warnings))


@dataclass(frozen=True)
class SpansReport:
    run: Run
    layout: Layout
    spans: tuple[SpanResult, ...]
    failed: tuple[str, ...] = ()
    findings: list[Finding] = field(default_factory=list)
    system: dict[str, Any] | None = None  # the monitor output in the folder (report.json.system)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "source": {"path": self.run.location, "format": "spans", "traces": len(self.run.paths),
                       "partial": bool(self.failed) or any(s.partial for s in self.spans),
                       "process": self.layout.process, "processes": self.layout.processes},
            "spans": [{"path": s.path, "steps": s.steps,
                       "mean_step_us": round(s.mean_step_us, 3),
                       "findings": [f.id for f in s.findings]} for s in self.spans],
            "failed": list(self.failed),
            "findings": [{**f.to_json(), "spans": _found_in(self.spans, f.id)}
                         for f in self.findings],
            "system": self.system,
        }


def _found_in(spans: tuple[SpanResult, ...], rule: str) -> list[int]:
    return [i for i, s in enumerate(spans) if any(f.id == rule for f in s.findings)]


def merge_findings(spans: tuple[SpanResult, ...]) -> list[Finding]:
    """One finding per rule: the capture with the largest saving shows it; the evidence
    gains where else it was found."""
    best: dict[str, tuple[int, Finding]] = {}
    for i, s in enumerate(spans):
        for f in s.findings:
            if f.id not in best or f.saving_us > best[f.id][1].saving_us:
                best[f.id] = (i, f)
    out = []
    for rule, (i, f) in best.items():
        found = _found_in(spans, rule)
        savings = ", ".join(format_us(g.saving_us) for j in found
                            for g in spans[j].findings if g.id == rule)
        name = spans[i].path.rstrip("/").rsplit("/", 1)[-1]
        where = (f"found in {len(found)} of {len(spans)} captures (saving {savings} per step); "
                 f"evidence below from capture {i + 1} ({name}), where it saves most")
        out.append(f if len(spans) == 1 else replace(f, evidence=(where, *f.evidence)))
    return sorted(out, key=lambda f: -f.saving_us)


def build_spans_report(run: Run, layout: Layout, paths: list[str], failed: list[str], *,
                       executor: str, workers: int | None, scheduler: str | None,
                       use_cache: bool, storage_options: dict[str, Any] | None,
                       progress: Callable[[int, int], None] | None) -> SpansReport:
    tasks = [RankTask(p, use_cache, storage_options) for p in paths]
    results = map_ranks(report_span, tasks, executor=executor, workers=workers,
                        scheduler=scheduler, progress=progress)
    spans = tuple(r for r in results if isinstance(r, SpanResult))
    failed = failed + [r.error for r in results if isinstance(r, RankFailure)]
    if not spans:
        raise TraceSourceError(f"{run.location}: no capture could be read ({failed[0]})")
    from stepscope.report.json.system import system_beside

    return SpansReport(run, layout, spans, tuple(failed), merge_findings(spans),
                       system_beside(run.location))
