"""``with stepscope.monitor(): train()``: the monitor around a block of a running program.

The phase hooks go into this process (now if torch is loaded, else when it is imported);
the sampler runs as a separate process (``python -m stepscope.capture.monitor.sampler``)
watching this one, and writes its samples when told to stop. On exit the verdict is
computed, ``monitor.json`` and ``monitor.parquet`` written to LOGDIR/RUN/ and, unless
``report=False``, the text report printed on stderr. The hooks stay installed but
inactive afterwards (a wrapper frame per hooked call; torch cannot be un-patched safely
while other code may hold the patched functions).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from stepscope.capture import paths
from stepscope.capture.monitor import phases, store
from stepscope.capture.monitor.output import finish
from stepscope.errors import StepscopeError, UsageError

_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))))
_SAMPLER = ("import sys\n"
            f"sys.path.append({_PACKAGE_ROOT!r})\n"
            "from stepscope.capture.monitor.sampler import main\n"
            "sys.exit(main(sys.argv[1:]))\n")


@dataclass
class Monitoring:
    """What ``monitor()`` yields; filled in when the block ends."""

    run_dir: str
    bound: str | None = None
    confidence: str = ""
    next_step: str = ""
    report: dict[str, Any] = field(default_factory=dict)


class Session:
    """``start()`` ... ``stop()``: what ``monitor()`` and the Lightning callback run."""

    def __init__(self, logdir: str = "stepscope-logs", *, run: str | None = None,
                 hz: float = 10.0, report: bool = True) -> None:
        if not 0 < hz <= 100:
            raise UsageError(f"stepscope.monitor: hz must be in (0, 100] (got {hz:g})")
        name = paths.safe_name(run) if run else paths.safe_name(
            f"{paths.default_run_name()}_monitor")
        self.handle = Monitoring(os.path.join(logdir, name))
        self.hz = hz
        self.report = report
        self._sampler: subprocess.Popen[bytes] | None = None
        self._board: phases.Board | None = None
        self._started = 0.0

    def start(self) -> Monitoring:
        fd, self._page = tempfile.mkstemp(prefix="stepscope-monitor-", suffix=".page")
        os.close(fd)
        fd, self._samples = tempfile.mkstemp(prefix="stepscope-monitor-", suffix=".parquet")
        os.close(fd)
        phases.create(self._page)
        self._board = phases.Board(self._page)
        phases.install_when_torch_imported(self._board)
        self._board.add("running", 1)
        self._sampler = subprocess.Popen(
            [sys.executable, "-c", _SAMPLER, str(os.getpid()), self._page, str(self.hz),
             self._samples], stdin=subprocess.DEVNULL)
        _wait_ready(self._sampler, self._samples + ".ready")
        self._started = time.monotonic()
        return self.handle

    def stop(self) -> Monitoring:
        """Stop sampling, write the files, print the report; idempotent."""
        sampler, self._sampler = self._sampler, None
        if sampler is None or self._board is None:
            return self.handle
        self._board.active = False
        duration = time.monotonic() - self._started
        sampler.send_signal(signal.SIGTERM)
        try:
            sampler.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sampler.kill()
        try:
            _finish(self.handle, self._samples, duration, self.report)
        finally:
            for path in (self._page, self._samples, self._samples + ".ready"):
                if os.path.exists(path):
                    os.unlink(path)
        return self.handle


@contextmanager
def monitor(logdir: str = "stepscope-logs", *, run: str | None = None, hz: float = 10.0,
            report: bool = True) -> Iterator[Monitoring]:
    """Monitor the enclosed block; see the module docstring."""
    session = Session(logdir, run=run, hz=hz, report=report)
    try:
        yield session.start()
    finally:
        session.stop()


def _wait_ready(sampler: subprocess.Popen[bytes], marker: str, timeout: float = 30.0) -> None:
    """Until the sampler took its first reading (its start-up is not the block's)."""
    deadline = time.monotonic() + timeout
    while not os.path.exists(marker) and sampler.poll() is None and (
            time.monotonic() < deadline):
        time.sleep(0.01)


def _finish(handle: Monitoring, samples_path: str, duration: float, report: bool) -> None:
    try:
        samples = store.read(samples_path)
    except StepscopeError as exc:
        print(f"stepscope.monitor: no samples ({exc})", file=sys.stderr)
        return
    samples = replace(samples, command=" ".join(sys.argv) or "python", duration_s=duration)
    found, data = finish(samples, handle.run_dir, stream=sys.stderr if report else None)
    handle.bound, handle.confidence, handle.next_step = (found.bound, found.confidence,
                                                         found.next_step)
    handle.report = data
