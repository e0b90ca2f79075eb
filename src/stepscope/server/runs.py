"""Runs of rank traces in the dashboard: a logdir run whose workers are ranks, analysed together.

The run report is built in the background (serial per-rank work in the store's thread, reusing
the per-trace Arrow cache) while the page polls for progress, as with single traces.
"""

from __future__ import annotations

from pathlib import Path

from stepscope.server.logdir import TraceFile
from stepscope.server.store import BackgroundLoads, Entry, file_stamp, load_into

MAX_RUNS = 4  # run reports kept in memory (small: summaries only)


def rank_files(files: list[TraceFile], run: str) -> list[TraceFile]:
    """One trace per worker of ``run`` (its newest span), when it has 2 or more workers.

    Worker names come from file names only (the listing must stay cheap); whether the
    workers are ranks is decided when the run is read (report/folder.py): workers that are
    captures of one process make the run's entry an error, never a run of ranks. Only
    profiler traces can be ranks (two TensorRT engines in one folder are not a run).
    """
    newest: dict[str, TraceFile] = {}
    for f in files:
        if f.run == run and f.kind == "trace":
            old = newest.get(f.worker)
            if old is None or (f.span, f.id) > (old.span, old.id):
                newest[f.worker] = f
    return list(newest.values()) if len(newest) >= 2 else []


class RunStore(BackgroundLoads[tuple[tuple[str, float, int], ...]]):
    """Run reports keyed by the run's trace paths and their (mtime, size)."""

    def __init__(self, *, use_cache: bool = True) -> None:
        super().__init__(keep=MAX_RUNS, workers=1, name="stepscope-run")
        self._use_cache = use_cache

    def get(self, location: str, paths: list[str]) -> Entry:
        ordered = sorted(paths)
        key = tuple((p, *file_stamp(p)) for p in ordered)  # a changed file is a new run
        return self.entry(key, lambda: Entry(total=len(paths)),
                          lambda e: self._load(location, ordered, e))

    def _load(self, location: str, paths: list[str], entry: Entry) -> None:
        from stepscope.model.run import Run
        from stepscope.report.run import build_run_report

        def tick(done: int, total: int) -> None:
            entry.done, entry.total = done, total

        def work() -> None:
            entry.state = "reading"
            report = build_run_report(Run(location, tuple(paths)), executor="serial",
                                      use_cache=self._use_cache, progress=tick)
            entry.report = report.to_json()

        load_into(entry, work)


def run_location(files: list[TraceFile]) -> str:
    return str(Path(files[0].path).parent)
