"""Runs of rank traces in the dashboard: a logdir run whose workers are ranks, analysed together.

The run report is built in the background (serial per-rank work in the store's thread, reusing
the per-trace Arrow cache) while the page polls for progress, as with single traces.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from stepscope.errors import StepscopeError, one_line
from stepscope.server.logdir import TraceFile
from stepscope.server.store import Entry

MAX_RUNS = 4  # run reports kept in memory (small: summaries only)


def rank_files(files: list[TraceFile], run: str) -> list[TraceFile]:
    """One trace per worker of ``run`` (its newest span), when it has 2 or more workers."""
    newest: dict[str, TraceFile] = {}
    for f in files:
        if f.run == run:
            old = newest.get(f.worker)
            if old is None or (f.span, f.id) > (old.span, old.id):
                newest[f.worker] = f
    return list(newest.values()) if len(newest) >= 2 else []


class RunStore:
    """Run reports keyed by the run's trace paths and their (mtime, size)."""

    def __init__(self, *, use_cache: bool = True) -> None:
        self._entries: dict[tuple[tuple[str, float, int], ...], Entry] = {}
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="stepscope-run")
        self._use_cache = use_cache

    def get(self, location: str, paths: list[str]) -> Entry:
        key = tuple((p, *_stamp(p)) for p in sorted(paths))
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None:
                entry = Entry(total=len(paths))
                self._pool.submit(self._load, location, sorted(paths), entry)
            self._entries[key] = entry
            done = [k for k, e in self._entries.items() if e.state in ("ready", "error")]
            for old in done[: max(0, len(self._entries) - MAX_RUNS)]:
                del self._entries[old]
            return entry

    def _load(self, location: str, paths: list[str], entry: Entry) -> None:
        from stepscope.model.run import Run
        from stepscope.report.run import build_run_report

        def tick(done: int, total: int) -> None:
            entry.done, entry.total = done, total

        try:
            entry.state = "reading"
            report = build_run_report(Run(location, tuple(paths)), executor="serial",
                                      use_cache=self._use_cache, progress=tick)
            entry.report = report.to_json()
            entry.state = "ready"
        except StepscopeError as exc:
            entry.error, entry.state = one_line(str(exc)), "error"
        except Exception as exc:
            entry.error = f"internal error ({type(exc).__name__}: {one_line(str(exc))})"
            entry.state = "error"

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def _stamp(path: str) -> tuple[float, int]:
    try:
        st = os.stat(path)
        return st.st_mtime, st.st_size
    except OSError:
        return 0.0, 0


def run_location(files: list[TraceFile]) -> str:
    return str(Path(files[0].path).parent)
