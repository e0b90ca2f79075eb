"""Keep torch's native profiler chatter off the user's terminal during ``demo`` and ``run``.

libkineto prints ``USDT: ... profiler_start`` / ``STAGE: ...`` lines, and c10 warns
``CPUAllocator.cpp ... Memory block of unknown size`` for every tensor allocated before the
profiler started: C++ writes them straight to file descriptor 2, so ``sys.stderr`` cannot
catch them. While :func:`quiet_native_profiler` is active, fd 2 is a pipe whose reader thread
forwards every line except those to the real stderr, in order.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

NOISE = re.compile(
    rb"^(USDT:|STAGE:)\S* .*SyncActivityProfilerHandler"  # libkineto start/stop markers
    rb"|^\[W\S* \S+ CPUAllocator\.cpp:\d+\] Memory block of unknown size"
)
_DRAIN_S = 2.0  # how long to wait for forked children still holding the pipe at exit


def is_noise(line: bytes) -> bool:
    return NOISE.search(line) is not None


@contextmanager
def quiet_native_profiler() -> Iterator[None]:
    """Filter the profiler's native noise from fd 2 for the duration of the block."""
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
