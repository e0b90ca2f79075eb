"""Work in a forked child while the caller goes on: the other cores' share.

The report is single-threaded after the read; its largest parts that depend only on the
trace (every step's critical path, the replay graph and the findings' replays) run beside
the rest this way. The child sees the parent's memory as it was at the fork (copy on write,
no pickling of the trace) and sends back only pickled answers. ``Served``: a child that
prepares a state as soon as it can (the replay graph) and answers the caller's questions
about it once they are known; ``Forked``: one computation, a ``Served`` asked once. The
answers are those the caller would have computed itself: anything that goes wrong in the
child (an exception, a crash, an answer that does not pickle) makes the caller compute it,
so it sees exactly what a serial run gives (the same value or the same error).
"""
from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterable
from typing import Any, BinaryIO, Generic, NoReturn, TypeVar

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


S = TypeVar("S")
Q = TypeVar("Q")
R = TypeVar("R")

_LEN = 8  # bytes of the length before each pickled message


def _send(fh: BinaryIO, obj: object) -> None:
    payload = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    fh.write(len(payload).to_bytes(_LEN, "little"))
    fh.write(payload)
    fh.flush()


def _receive(fh: BinaryIO) -> Any:
    """The next message; EOFError when the other side is gone (or wrote half of one)."""
    head = fh.read(_LEN)
    if len(head) < _LEN:
        raise EOFError
    n = int.from_bytes(head, "little")
    payload = fh.read(n)
    if len(payload) < n:
        raise EOFError
    return pickle.loads(payload)


class Served(Generic[S, Q, R]):
    """``prepare()`` started now in a child, which then answers ``answer(state, q)`` for each
    ``ask(q)``, in order: work that can start before its questions are known (the replay
    graph, while the caller computes the findings that say what to replay). ``idle``: work
    the child may do once prepared while no question has come yet, a step at a time (each
    ``next`` of ``idle(state)``), stopping as soon as the first question arrives (the
    report's derived tables, while the caller still runs its analyses). It must change no
    answer, only how soon one comes: it is not run when the caller answers itself. The
    answers are the serial ones: when not enabled, or when anything
    goes wrong in the child (an exception, a crash, a message that does not pickle), the
    caller prepares the state itself and answers from then on (the same values, the same
    errors). Call ``close()`` (in a ``finally``) so that a started child is reaped."""

    def __init__(self, prepare: Callable[[], S], answer: Callable[[S, Q], R], *,
                 enabled: bool = True, idle: Callable[[S], Iterable[None]] | None = None,
                 ) -> None:
        self._prepare, self._answer = prepare, answer
        self._pid = -1
        self._to: BinaryIO | None = None
        self._from: BinaryIO | None = None
        self._state: S
        self._local = False
        if not (enabled and can_fork()):
            return
        ask_r, ask_w = os.pipe()
        ans_r, ans_w = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            for fd in (ask_r, ask_w, ans_r, ans_w):
                os.close(fd)
            return
        if pid == 0:  # the child: prepare, then answer until the caller closes its end
            os.close(ask_w)
            os.close(ans_r)
            _serve(prepare, answer, ask_r, ans_w, idle)
        os.close(ask_r)
        os.close(ans_w)
        self._pid = pid
        self._to, self._from = os.fdopen(ask_w, "wb"), os.fdopen(ans_r, "rb")

    def ask(self, question: Q, meanwhile: Callable[[], None] | None = None) -> R:
        """The answer; ``meanwhile``: work for this process while the child answers (run
        first when the answer is computed here)."""
        if self._pid > 0:
            assert self._to is not None and self._from is not None
            try:
                _send(self._to, question)
            except Exception:  # the child is gone (or the question does not pickle)
                self.close()
        if meanwhile is not None:
            meanwhile()
        if self._pid > 0:
            assert self._from is not None
            try:
                reply: R = _receive(self._from)
                return reply
            except Exception:  # the child failed (or its answer does not unpickle)
                self.close()
        if not self._local:
            self._state = self._prepare()
            self._local = True
        return self._answer(self._state, question)

    def close(self) -> None:
        """Stop and reap the child (its state is no longer wanted)."""
        for fh in (self._to, self._from):
            if fh is not None:
                with contextlib.suppress(OSError):
                    fh.close()
        self._to = self._from = None
        if self._pid > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._pid, signal.SIGKILL)
            os.waitpid(self._pid, 0)
            self._pid = -1


def _serve(prepare: Callable[[], S], answer: Callable[[S, Q], R], ask: int,
           reply: int, idle: Callable[[S], Iterable[None]] | None = None) -> NoReturn:
    """The child: prepare, answer each question until the caller closes its end, then
    leave without running the parent's exit handlers. Any failure is only a short or
    missing reply: the caller then answers itself and sees the serial run's value or
    error."""
    code = 1
    try:
        inp, out = os.fdopen(ask, "rb"), os.fdopen(reply, "wb")
        state = prepare()
        if idle is not None:  # until the first question (nothing of it is buffered yet)
            for _ in idle(state):
                if select.select([ask], [], [], 0)[0]:
                    break
        while True:
            try:
                question = _receive(inp)
            except EOFError:  # the caller closed: done
                break
            _send(out, answer(state, question))
        code = 0
    except BaseException:
        pass
    finally:
        os._exit(code)


class Forked(Generic[T]):
    """``fn()`` started now in a child when ``enabled`` (and the system can), otherwise
    run in the caller when ``result()`` is first asked for: a :class:`Served` asked one
    question. Call ``result()`` or ``close()`` (in a ``finally``) so that a started child
    is always reaped."""

    def __init__(self, fn: Callable[[], T], *, enabled: bool = True) -> None:
        self._served: Served[T, None, T] = Served(fn, _itself, enabled=enabled)
        self._done = False
        self._value: T

    def result(self) -> T:
        """The value (computed once: later calls return the same object)."""
        if not self._done:
            try:
                self._value = self._served.ask(None)
            finally:
                self._served.close()
            self._done = True
        return self._value

    def close(self) -> None:
        """Stop and reap a child whose result is no longer wanted (the caller failed or
        returned before asking); nothing once ``result()`` was taken."""
        self._served.close()


def _itself(value: T, _: None) -> T:
    return value
