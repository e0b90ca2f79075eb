"""One computation in a forked child while the caller goes on: the second core's share.

The report is single-threaded after the read; its two largest parts that depend only on
the trace (every step's critical path, the replays of the findings) run beside the rest
this way. The child sees the parent's memory as it was at the fork (copy on write, no
pickling of the trace) and sends back only its pickled result. The result is the same
object the caller would have computed itself: anything that goes wrong in the child (an
exception, a crash, an unpicklable result) makes ``result()`` compute it in the caller,
so the caller sees exactly what a serial run gives (the same value or the same error).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

MIN_CPUS = 2
# Below this many events (host + runtime + device, or graph events) a fork, whose cost
# grows with the parent's memory, costs about what it saves.
MIN_EVENTS = 200_000


def can_fork() -> bool:
    """Fork exists, a second core is there to run the child, and this process runs one
    thread: a child forked beside other threads (the dashboard's server, an MCP host)
    inherits whatever locks they held at that instant (the allocator's, logging's, the
    import lock) and can wait on them forever, with the parent blocked on its pipe."""
    return (hasattr(os, "fork") and sys.platform != "win32"
            and (os.cpu_count() or 1) >= MIN_CPUS and threading.active_count() == 1)


def worth_it(events: int) -> bool:
    """Whether work that scales with ``events`` is worth a child."""
    return events >= MIN_EVENTS


class Forked(Generic[T]):
    """``fn()`` started now in a child when ``enabled`` (and the system can), otherwise
    run in the caller when ``result()`` is first asked for. Call ``result()`` or
    ``close()`` (in a ``finally``) so that a started child is always reaped."""

    def __init__(self, fn: Callable[[], T], *, enabled: bool = True) -> None:
        self._fn = fn
        self._pid = -1
        self._fd = -1
        self._done = False
        self._value: T
        if not (enabled and can_fork()):
            return
        r, w = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # no process to be had (limits, memory): run it here when asked
            os.close(r)
            os.close(w)
            return
        if pid == 0:  # the child: compute, send, leave without running the parent's exits
            code = 1
            try:
                os.close(r)
                payload = pickle.dumps(fn(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(payload)
                code = 0
            except BaseException:  # the parent recomputes and sees the error
                pass
            finally:
                os._exit(code)
        os.close(w)
        self._pid, self._fd = pid, r

    def _reap(self) -> tuple[bytes, bool]:
        fd, self._fd = self._fd, -1  # the reader owns (and closes) it from here on
        with os.fdopen(fd, "rb") as inp:
            data = inp.read()
        _, status = os.waitpid(self._pid, 0)
        self._pid = -1
        return data, os.waitstatus_to_exitcode(status) == 0

    def result(self) -> T:
        """The value (computed once: later calls return the same object)."""
        if not self._done:
            self._value = self._take()
            self._done = True
        return self._value

    def _take(self) -> T:
        if self._pid > 0:
            data, ok = self._reap()
            if ok and data:
                try:
                    value: T = pickle.loads(data)
                    return value
                except Exception:  # a result that does not unpickle: recompute below
                    pass
        return self._fn()

    def close(self) -> None:
        """Stop and reap a child whose result is no longer wanted (the caller failed or
        returned before asking); nothing once ``result()`` was taken."""
        if self._pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            os.waitpid(self._pid, 0)
            self._pid = -1
