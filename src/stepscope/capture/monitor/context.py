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


@contextmanager
def monitor(logdir: str = "stepscope-logs", *, run: str | None = None, hz: float = 10.0,
            report: bool = True) -> Iterator[Monitoring]:
    """Monitor the enclosed block; see the module docstring."""
    if not 0 < hz <= 100:
        raise UsageError(f"stepscope.monitor: hz must be in (0, 100] (got {hz:g})")
    name = paths.safe_name(run) if run else paths.safe_name(
        f"{paths.default_run_name()}_monitor")
    handle = Monitoring(os.path.join(logdir, name))
    fd, page = tempfile.mkstemp(prefix="stepscope-monitor-", suffix=".page")
    os.close(fd)
    fd, samples_path = tempfile.mkstemp(prefix="stepscope-monitor-", suffix=".parquet")
    os.close(fd)
    phases.create(page)
    board = phases.Board(page)
    phases.install_when_torch_imported(board)
    board.add("running", 1)
    sampler = subprocess.Popen(
        [sys.executable, "-c", _SAMPLER, str(os.getpid()), page, str(hz), samples_path],
        stdin=subprocess.DEVNULL)
    _wait_ready(sampler, samples_path + ".ready")
    started = time.monotonic()
    try:
        yield handle
    finally:
        board.active = False
        duration = time.monotonic() - started
        sampler.send_signal(signal.SIGTERM)
        try:
            sampler.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sampler.kill()
        try:
            _finish(handle, samples_path, duration, report)
        finally:
            for path in (page, samples_path, samples_path + ".ready"):
                if os.path.exists(path):
                    os.unlink(path)


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
