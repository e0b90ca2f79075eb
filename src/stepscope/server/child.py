"""Read and analyse a trace in a forked child process; the server keeps only the results.

Parsing a trace and analysing it peak at several times the columns they leave behind
(each worker's chunk of Python objects, chunk columns and their merged copy, the analyses'
temporaries), and memory freed inside a long-lived process is mostly not given back to the
OS: a server that read a 4 GiB trace itself stayed at its peak. The child's memory goes back
when it exits. The server meanwhile reads the columns the child stored in the Arrow cache
(checked bytes, no Python objects per event: docs/dashboard.md) and builds the timeline
index from them while the child runs the analyses, so the two overlap.

Messages from the child, in order: ``("progress", done, total)`` while reading,
``("stored",)`` once the trace is in the cache, then ``("done", report_json, series)`` or
``("error", message)`` at any point.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from multiprocessing import get_context
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any

from stepscope.errors import StepscopeError, one_line


class ChildError(StepscopeError):
    """The child's one-line error (bad input), or that the child died."""


def _analyse(path: str, conn: Connection, top: int) -> None:  # pragma: no cover - in the child
    import threading

    from stepscope.analysis.compare.step_series import step_series
    from stepscope.formats import load_trace
    from stepscope.formats.kineto import reader
    from stepscope.report.build import build_report

    # forked while another thread may have held the reader's lock: this process has one thread
    reader._READ_LOCK = threading.Lock()
    try:
        trace = load_trace(path, use_cache=True,
                           progress=lambda done, total: conn.send(("progress", done, total)))
        conn.send(("stored",))
        report = build_report(trace, top=top)
        series = step_series(trace, report.analyses.steps, report.analyses.tree)
        conn.send(("done", report.to_json(), series))
    except StepscopeError as exc:
        conn.send(("error", one_line(str(exc))))
    except Exception as exc:
        conn.send(("error", f"internal error ({type(exc).__name__}: {one_line(str(exc))})"))
    finally:
        conn.close()


class Children:
    """The live loading children, so a closing server ends them."""

    def __init__(self) -> None:
        self._live: set[BaseProcess] = set()

    def run(self, path: str, top: int, on_progress: Callable[[int, int], None],
            on_stored: Callable[[], None]) -> tuple[dict[str, Any], Any]:
        """(report JSON, step series) of ``path``, analysed in a child; raises ChildError."""
        ctx = get_context("fork")  # the child needs no pickled state and starts at once
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_analyse, args=(path, send, top), name="stepscope-analyse")
        proc.start()  # not a daemon: the reader in the child forks its own workers
        self._live.add(proc)
        send.close()
        try:
            while True:
                try:
                    msg = recv.recv()
                except EOFError:
                    proc.join(5)
                    raise ChildError(f"{path}: the process reading it ended without an answer "
                                     f"(exit code {proc.exitcode}; out of memory?)") from None
                if msg[0] == "progress":
                    on_progress(msg[1], msg[2])
                elif msg[0] == "stored":
                    on_stored()
                elif msg[0] == "done":
                    return msg[1], msg[2]
                else:
                    raise ChildError(msg[1])
        finally:
            recv.close()
            proc.join(5)
            if proc.is_alive():  # it answered an error or we stopped listening: end it
                proc.terminate()
                proc.join(5)
            self._live.discard(proc)

    def close(self) -> None:
        for proc in list(self._live):
            if proc.pid is not None and proc.is_alive():
                os.kill(proc.pid, 15)
