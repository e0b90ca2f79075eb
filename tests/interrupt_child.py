"""A ``stepscope`` process held at a known point, for the Ctrl-C tests (test_interrupts.py).

``python -m tests.interrupt_child MARKERS WHERE ARGS...`` runs the console entry point with
ARGS; WHERE says where it waits until interrupted, after creating a file in MARKERS:
``workers``: every rank worker waits inside its task; ``import``: the command's module
import waits (a Ctrl-C during start-up).
"""

from __future__ import annotations

import importlib.abc
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

MARKERS = Path(sys.argv[1])


def _mark(what: str) -> None:
    (MARKERS / f"{what}.{os.getpid()}").write_text("")


def waiting_task(task: Any) -> Any:
    """Stands in for summarise_rank in the workers: says it started, then waits."""
    _mark("worker")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.01)
    raise AssertionError("never interrupted")


class _SlowImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name == "stepscope.cli.report":
            _mark("import")
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                time.sleep(0.01)
        return None


def run() -> None:
    # Ctrl-C as a terminal delivers it: a shell that starts the suite in the background
    # (``nohup … &``) hands every child SIGINT ignored, and Python then installs no
    # KeyboardInterrupt handler, so the interrupt the test sends would never arrive.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    where, args = sys.argv[2], sys.argv[3:]
    if where == "workers":
        import stepscope.report.run

        stepscope.report.run.summarise_rank = waiting_task  # type: ignore[assignment]
    else:
        sys.meta_path.insert(0, _SlowImport())
    from stepscope.cli.main import entry_point

    sys.argv = ["stepscope", *args]
    entry_point()


if __name__ == "__main__":
    run()
