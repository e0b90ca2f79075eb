"""Load traces in the background: the server answers (with progress) while a trace loads."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from stepscope.analysis.step_series import StepSeries
from stepscope.errors import StepscopeError, one_line
from stepscope.report.build import Report
from stepscope.report.timeline import TimelineIndex

DASHBOARD_TOP = 1000  # table rows the dashboard receives (the JSON report's top-N prefix)
MAX_LOADED = 6  # traces kept in memory; the least recently used finished one goes first


@dataclass
class Entry:
    state: str = "queued"  # queued | reading | analysing | indexing | ready | error
    done: int = 0
    total: int = 0
    error: str | None = None
    started: float = field(default_factory=time.monotonic)
    stamp: tuple[float, int] = (0.0, 0)  # (mtime, size) of the file when loading began
    report: dict[str, Any] | None = None
    timeline: TimelineIndex | None = None
    series: StepSeries | None = None  # per-step samples for Compare's significance tests

    def progress(self) -> dict[str, Any]:
        return {"state": self.state, "done": self.done, "total": self.total,
                "error": self.error, "elapsed_s": round(time.monotonic() - self.started, 3)}


class TraceStore:
    """Loaded traces keyed by absolute path; one background thread per load."""

    def __init__(self, *, use_cache: bool = True, workers: int = 2,
                 max_loaded: int = MAX_LOADED) -> None:
        self._entries: dict[str, Entry] = {}  # insertion order = least recently used first
        self._max = max_loaded
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="stepscope-load")
        self._use_cache = use_cache

    def get(self, path: str) -> Entry:
        """The entry for ``path``, starting its load on first request or when the file changed."""
        try:
            st = os.stat(path)
            stamp = (st.st_mtime, st.st_size)
        except OSError:
            stamp = (0.0, 0)
        with self._lock:
            entry = self._entries.get(path)
            if entry is None or (entry.stamp != stamp and entry.state in ("ready", "error")):
                entry = Entry(stamp=stamp)
                self._pool.submit(self._load, path, entry)
            self._entries.pop(path, None)
            self._entries[path] = entry
            done = [p for p, e in self._entries.items() if e.state in ("ready", "error")]
            for old in done[: max(0, len(self._entries) - self._max)]:
                del self._entries[old]  # reopened from the Arrow cache when asked again
            return entry

    def _load(self, path: str, entry: Entry) -> None:
        from stepscope.analysis.step_series import step_series
        from stepscope.formats import load_trace
        from stepscope.report.build import build_report
        from stepscope.server.tensorrt import is_trtexec_run, load_trt_report

        def tick(done: int, total: int) -> None:
            entry.done, entry.total = done, total

        try:
            if is_trtexec_run(path):  # a TensorRT engine's outputs: its own report, no timeline
                entry.state = "reading"
                entry.report = load_trt_report(path)
                entry.state = "ready"
                return
            entry.state = "reading"
            trace = load_trace(path, use_cache=self._use_cache, progress=tick)
            entry.state = "analysing"
            report: Report = build_report(trace, top=DASHBOARD_TOP)
            entry.report = report.to_json()
            a = report.analyses
            entry.series = step_series(trace, a.steps, a.tree)
            entry.state = "indexing"
            entry.timeline = TimelineIndex(trace)
            entry.state = "ready"
        except StepscopeError as exc:
            entry.error, entry.state = one_line(str(exc)), "error"
        except Exception as exc:
            entry.error = f"internal error ({type(exc).__name__}: {one_line(str(exc))})"
            entry.state = "error"

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
