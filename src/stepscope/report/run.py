"""A run's report: summarise every rank (any executor), reduce, advise; JSON and text."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from stepscope.advice.finding import Finding
from stepscope.analysis.distributed.rank import RankSummary
from stepscope.analysis.distributed.run import Distributed, analyse_run
from stepscope.errors import StepscopeError, TraceSourceError, UsageError, redact_urls
from stepscope.io.listing import list_traces
from stepscope.model.run import Run, assign_ranks
from stepscope.parallel.executor import map_ranks
from stepscope.parallel.tasks import RankFailure, RankTask, summarise_rank
from stepscope.report.folder import RANKS, Capture, Layout, folder_layout
from stepscope.report.json.critical import run_path_json
from stepscope.report.json.distributed import distributed_json
from stepscope.units import count

if TYPE_CHECKING:
    from stepscope.analysis.graph.ranks import RunPath
    from stepscope.report.spans import SpansReport

SCHEMA = "stepscope.report/1"


def find_run(locations: Sequence[str], storage_options: dict[str, Any] | None = None) -> Run:
    """A directory or prefix of rank traces, or an explicit list of trace paths."""
    if len(locations) == 1:
        loc = locations[0]
        return Run(redact_urls(loc), tuple(list_traces(loc, storage_options)))
    if not locations:
        raise TraceSourceError("no trace given")
    return Run(redact_urls(locations[0]), tuple(locations))  # location is only shown


@dataclass(frozen=True)
class RunReport:
    run: Run
    distributed: Distributed
    findings: list[Finding] = field(default_factory=list)
    critical_path: RunPath | None = None  # across ranks (report/crossrank.py)
    path_note: str = ""  # why there is none, or what it leaves out

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "source": {"path": self.run.location, "format": "run", "traces": len(self.run.paths),
                       "partial": bool(self.distributed.failed)},
            "distributed": distributed_json(self.distributed),
            "critical_path": run_path_json(self.critical_path, self.path_note),
            "findings": [f.to_json() for f in self.findings],
        }


def captures_of(ok: Sequence[tuple[str, RankSummary]]) -> list[Capture]:
    return [Capture(p, s.rank, s.world_size, s.pid, s.start_ns, s.end_ns) for p, s in ok]


def _summaries(run: Run, tasks: list[RankTask], **kw: Any
               ) -> tuple[list[tuple[str, RankSummary]], list[str], Layout]:
    results = map_ranks(summarise_rank, tasks, **kw)
    ok = [(t.path, r) for t, r in zip(tasks, results, strict=True) if isinstance(r, RankSummary)]
    failed = [r.error for r in results if isinstance(r, RankFailure)]
    if not ok:
        raise TraceSourceError(f"{run.location}: no rank could be read ({failed[0]})")
    return ok, failed, folder_layout(run.location, captures_of(ok))


def build_folder_report(run: Run, *, executor: str = "processes", workers: int | None = None,
                        scheduler: str | None = None, use_cache: bool = True,
                        storage_options: dict[str, Any] | None = None,
                        link_gbps: float | None = None,
                        progress: Callable[[int, int], None] | None = None
                        ) -> RunReport | SpansReport:
    """The run view of a folder of ranks; the process's findings for captures of one
    process (report/folder.py decides which)."""
    from stepscope.report.spans import build_spans_report

    tasks = [RankTask(p, use_cache, storage_options) for p in run.paths]
    ok, failed, layout = _summaries(run, tasks, executor=executor, workers=workers,
                                    scheduler=scheduler, progress=progress)
    if layout.kind == RANKS:
        return _run_report(run, ok, failed, link_gbps, use_cache, storage_options)
    return build_spans_report(run, layout, [p for p, _ in ok], failed, executor=executor,
                              workers=workers, scheduler=scheduler, use_cache=use_cache,
                              storage_options=storage_options, progress=progress)


def rank_summaries(run: Run, *, executor: str = "processes", workers: int | None = None,
                   scheduler: str | None = None, use_cache: bool = True,
                   storage_options: dict[str, Any] | None = None,
                   progress: Callable[[int, int], None] | None = None
                   ) -> tuple[list[tuple[str, RankSummary]], list[str]]:
    """Each rank's (path, summary) and the one-line errors of the files that could not be
    read; a UsageError when the traces are not ranks (captures of one process)."""
    tasks = [RankTask(p, use_cache, storage_options) for p in run.paths]
    ok, failed, layout = _summaries(run, tasks, executor=executor, workers=workers,
                                    scheduler=scheduler, progress=progress)
    if layout.kind != RANKS:
        raise UsageError(f"{run.location}: {count(len(ok), 'capture')} of {layout.process}, not "
                         "ranks of a job: open each trace (or `stepscope report` the folder)")
    return ok, failed


def build_run_report(run: Run, *, executor: str = "processes", workers: int | None = None,
                     scheduler: str | None = None, use_cache: bool = True,
                     storage_options: dict[str, Any] | None = None,
                     link_gbps: float | None = None,
                     progress: Callable[[int, int], None] | None = None) -> RunReport:
    """The run view; a UsageError when the traces are not ranks (captures of one process)."""
    ok, failed = rank_summaries(run, executor=executor, workers=workers, scheduler=scheduler,
                                use_cache=use_cache, storage_options=storage_options,
                                progress=progress)
    return _run_report(run, ok, failed, link_gbps, use_cache, storage_options)


def ranked_paths(ok: list[tuple[str, RankSummary]]
                 ) -> tuple[list[tuple[int, RankSummary]], list[str], str]:
    """(rank, summary) pairs by rank, their traces' paths, and where the ranks came from."""
    ranks, source = assign_ranks([p for p, _ in ok], [s.rank for _, s in ok])
    order = sorted(range(len(ok)), key=lambda i: ranks[i])
    return [(ranks[i], ok[i][1]) for i in order], [ok[i][0] for i in order], source


def _run_report(run: Run, ok: list[tuple[str, RankSummary]], failed: list[str],
                link_gbps: float | None, use_cache: bool = True,
                storage_options: dict[str, Any] | None = None) -> RunReport:
    from stepscope.advice.run import advise_run
    from stepscope.report.crossrank import run_graph

    ranked, paths, source = ranked_paths(ok)
    dist = analyse_run(ranked, rank_source=source, failed=failed, link_gbps=link_gbps)
    try:
        built = run_graph(paths, ranked, use_cache=use_cache, storage_options=storage_options)
        path = built.graph.critical_path() if built.graph is not None else None
        note = built.note
    except StepscopeError as exc:  # the run's view stands without its graph
        path, note = None, str(exc)
    except Exception as exc:  # a defect in the optional graph: said, as the advisor does
        path, note = None, (f"the run's graph could not be built ({type(exc).__name__}: "
                            f"{exc}); please report this with the traces")
    return RunReport(run, dist, advise_run(dist), path, note)
