"""Child side of ``stepscope monitor``: run a script or module as ``__main__`` with the
phase hooks of ``phases`` (installed when the program imports torch).

The parent starts ``python -c <bootstrap> [-m module | script] args...`` with the shared
page's path in ``STEPSCOPE_MONITOR_CONFIG`` (removed here so that processes the program
starts are not hooked) and samples the process from outside.
"""

from __future__ import annotations

import json
import os
import sys

from stepscope.capture.monitor import phases
from stepscope.capture.runner import parse_target, run_target

CONFIG_ENV = "STEPSCOPE_MONITOR_CONFIG"


def install_from_env() -> phases.Board | None:
    """Hook the phases if the parent asked for it (``stepscope run --monitor`` too)."""
    settings = json.loads(os.environ.pop(CONFIG_ENV, "{}"))
    path = settings.get("board")
    if not path:
        return None
    board = phases.Board(path)
    phases.install_when_torch_imported(board)
    return board


def main(argv: list[str]) -> int:
    target = parse_target(argv)
    sys.argv = [target.module or target.script or "", *target.args]
    board = install_from_env()
    if board is not None:
        board.add("running", 1)  # the start of the window when no step is counted
    return run_target(target)
