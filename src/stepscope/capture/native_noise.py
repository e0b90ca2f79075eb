"""Keep torch's native profiler chatter off the user's terminal during ``demo`` and ``run``.

libkineto prints ``USDT: ... profiler_start`` / ``STAGE: ...`` lines, and c10 warns
``CPUAllocator.cpp ... Memory block of unknown size`` for every tensor allocated before the
profiler started: C++ writes them straight to file descriptor 2, so ``sys.stderr`` cannot
catch them. The CUDA build of torch on a machine without a usable GPU driver adds libkineto's
``ERROR:... DeviceProperties.cpp:NN] gpuGetDeviceCount failed with code 35`` (35: the driver
is missing or too old; older kineto spells it ``cudaGetDeviceCount``) when the profiler starts,
and torch's Python ``UserWarning: CUDA initialization: ...`` when it probes for a device: both
say only that the run is on the CPU, which the report already says; with ``--repeat``,
torch.profiler warns that it clears events after each cycle (each cycle is its own trace
here). While :func:`quiet_native_profiler` is active, fd 2 is a pipe whose reader thread
forwards every line except those to the real stderr, in order, and those two warnings are
ignored.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

NOISE = re.compile(
    rb"^(USDT:|STAGE:)\S* .*SyncActivityProfilerHandler"  # libkineto start/stop markers
    rb"|^\[W\S* \S+ CPUAllocator\.cpp:\d+\] Memory block of unknown size"
    rb"|^ERROR:\S* .*\] (?:gpu|cuda)GetDeviceCount failed with code \d+\s*$"  # no GPU driver
)
# Python warnings, not fd 2 text: torch.cuda's probe on a CUDA build without a usable driver,
# and torch.profiler's note on a repeating schedule (each cycle's trace is written by its
# on_trace_ready, so nothing is lost).
QUIET_WARNINGS = (r"CUDA initialization: ",
                  r"Warning: Profiler clears events at the end of each cycle")
_DRAIN_S = 2.0  # how long to wait for forked children still holding the pipe at exit


def is_noise(line: bytes) -> bool:
    return NOISE.search(line) is not None


@contextmanager
def quiet_native_profiler() -> Iterator[None]:
    """Filter the profiler's native noise from fd 2 for the duration of the block."""
    with warnings.catch_warnings():
        for message in QUIET_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        yield from _quiet_fd2()


def _quiet_fd2() -> Iterator[None]:
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no usable fd 2 (embedded interpreters): nothing to filter
        yield
        return
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    forwarder = threading.Thread(target=_forward, args=(read_end, saved), daemon=True,
                                 name="stepscope-stderr-filter")
    forwarder.start()
    try:
        yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)  # our copy of the write end is gone: EOF once children close theirs
        forwarder.join(_DRAIN_S)
        if not forwarder.is_alive():
            os.close(saved)


def _forward(read_end: int, out: int) -> None:
    pending = b""
    with os.fdopen(read_end, "rb", buffering=0) as pipe:
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = b"".join(line + b"\n" for line in lines if not is_noise(line))
            if kept:
                _write_all(out, kept)
    if pending and not is_noise(pending):
        _write_all(out, pending)


def _write_all(fd: int, data: bytes) -> None:
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass  # the terminal went away: nothing left to show it to
