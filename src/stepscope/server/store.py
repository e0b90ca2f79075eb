"""Load traces in the background: the server answers (with progress) while a trace loads."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from stepscope.analysis.compare.step_series import StepSeries
from stepscope.errors import StepscopeError, one_line
from stepscope.report.build import Report
from stepscope.report.counters import CounterTracks
from stepscope.report.timeline import TimelineIndex
from stepscope.server.child import Children

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
    counters: CounterTracks | None = None  # memory and monitor counter tracks
    series: StepSeries | None = None  # per-step samples for Compare's significance tests

    def progress(self) -> dict[str, Any]:
        return {"state": self.state, "done": self.done, "total": self.total,
                "error": self.error, "elapsed_s": round(time.monotonic() - self.started, 3)}


def file_stamp(path: str) -> tuple[float, int]:
    """(mtime, size) of a file, (0, 0) when it cannot be read: a change means load again.
    A folder (a trtexec output folder is one entry) stamps as its newest file and total size."""
    try:
        st = os.stat(path)
        if not os.path.isdir(path):
            return st.st_mtime, st.st_size
        with os.scandir(path) as it:
            files = [e.stat() for e in it if e.is_file(follow_symlinks=False)]
        return max((f.st_mtime for f in files), default=st.st_mtime), sum(f.st_size for f in files)
    except OSError:
        return 0.0, 0


def with_monitor(path: str, stamp: tuple[float, int]) -> tuple[float, int]:
    """``stamp`` changed by the monitor samples beside ``path``, if any."""
    from stepscope.formats.monitor.read import samples_beside

    beside = samples_beside(path)
    if beside is None:
        return stamp
    mtime, size = file_stamp(beside)
    return max(stamp[0], mtime), stamp[1] + size + 1


def load_into(entry: Entry, work: Callable[[], None]) -> None:
    """Run a background load; a failure becomes the entry's one-line error, never a raise."""
    try:
        work()
        entry.state = "ready"
    except StepscopeError as exc:
        entry.error, entry.state = one_line(str(exc)), "error"
    except Exception as exc:
        entry.error = f"internal error ({type(exc).__name__}: {one_line(str(exc))})"
        entry.state = "error"


K = TypeVar("K", bound=Hashable)


class BackgroundLoads(Generic[K]):
    """Entries loaded on a thread pool; beyond ``keep``, the least recently used finished
    ones are dropped (they load again, from the Arrow cache, when asked for)."""

    def __init__(self, *, keep: int, workers: int, name: str) -> None:
        self._entries: dict[K, Entry] = {}  # insertion order = least recently used first
        self._keep = keep
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)

    def entry(self, key: K, start: Callable[[], Entry], load: Callable[[Entry], None],
              stale: Callable[[Entry], bool] = lambda e: False) -> Entry:
        """The entry for ``key``: a new one (``start()``, loaded by ``load``) on first
        request or when a finished one is ``stale``."""
        with self._lock:
            entry = self._entries.pop(key, None)
            if entry is None or (entry.state in ("ready", "error") and stale(entry)):
                entry = start()
                self._pool.submit(load, entry)
            self._entries[key] = entry
            done = [k for k, e in self._entries.items() if e.state in ("ready", "error")]
            for old in done[: max(0, len(self._entries) - self._keep)]:
                del self._entries[old]
            return entry

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class TraceStore(BackgroundLoads[str]):
    """Loaded traces keyed by absolute path, loaded again when the file changes."""

    def __init__(self, *, use_cache: bool = True, workers: int = 2,
                 max_loaded: int = MAX_LOADED) -> None:
        super().__init__(keep=max_loaded, workers=workers, name="stepscope-load")
        self._use_cache = use_cache
        self._children = Children()

    def get(self, path: str) -> Entry:
        """The entry for ``path``, starting its load on first request or when the file changed
        (or a monitor output appeared or changed beside it: ``stepscope run --monitor``
        writes it when the program ends, after the trace)."""
        stamp = with_monitor(path, file_stamp(path))
        return self.entry(path, lambda: Entry(stamp=stamp),
                          lambda e: self._load(path, e), stale=lambda e: e.stamp != stamp)

    def _load(self, path: str, entry: Entry) -> None:
        from stepscope.analysis.compare.step_series import step_series
        from stepscope.formats import load_trace
        from stepscope.report.build import build_report
        from stepscope.report.counters import read_monitor
        from stepscope.server.tensorrt import is_trtexec_run, load_trt_report

        def tick(done: int, total: int) -> None:
            entry.done, entry.total = done, total

        def work() -> None:
            if is_trtexec_run(path):  # a TensorRT engine's outputs: its own report, no timeline
                entry.state = "reading"
                entry.report = load_trt_report(path)
                return
            entry.state = "reading"
            if self._use_cache:
                work_in_child()
                return
            trace = load_trace(path, use_cache=False, progress=tick)
            entry.state = "analysing"
            report: Report = build_report(trace, top=DASHBOARD_TOP)
            entry.report = report.to_json()
            a = report.analyses
            entry.series = step_series(trace, a.steps, a.tree)
            entry.state = "indexing"
            entry.timeline = TimelineIndex(trace)
            entry.counters = CounterTracks(trace, read_monitor(path))

        def work_in_child() -> None:
            # the child parses (into the cache) and analyses; this process indexes the
            # cached columns meanwhile and never holds the parse's peak (server/child.py)
            def stored() -> None:
                entry.state = "analysing"
                trace = load_trace(path, use_cache=True)
                entry.timeline = TimelineIndex(trace)
                entry.counters = CounterTracks(trace, read_monitor(path))

            entry.report, entry.series = self._children.run(path, DASHBOARD_TOP, tick, stored)
            if entry.timeline is None:  # the child failed after storing: nothing to show
                raise RuntimeError("the trace was analysed but never stored")

        load_into(entry, work)

    def close(self) -> None:
        self._children.close()
        super().close()
