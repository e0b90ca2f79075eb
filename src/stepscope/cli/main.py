"""``stepscope`` entry point: dispatches to one module per subcommand.

Each subcommand module defines ``HELP`` (one line), ``add_arguments(parser)`` and
``run(args) -> int``. A StepscopeError anywhere becomes a one-line message and exit 2.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import signal
import sys
import warnings
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from stepscope.errors import StepscopeError, one_line

# Exit codes (docs/cli.md): 0 ok, 1 a `diff --fail-on` gate failed, 2 usage or input error
# (one line on stderr), 3 an internal error (a bug of ours), 130 interrupted.
EXIT_INTERNAL = 3

# name -> module; modules are imported only when their command runs (fast --help, and
# `stepscope report` never imports torch).
COMMANDS: dict[str, str] = {
    "report": "stepscope.cli.report",
    "run": "stepscope.cli.run",
    "demo": "stepscope.cli.demo",
    "view": "stepscope.cli.view",
    "memory": "stepscope.cli.memory",
    "diff": "stepscope.cli.diff",
    "sql": "stepscope.cli.sql",
    "mcp": "stepscope.cli.mcp",
    "monitor": "stepscope.cli.monitor",
    "whatif": "stepscope.cli.whatif",
}

HELPS: dict[str, str] = {
    "report": "analyse a trace and print the report (text or JSON)",
    "run": "profile an unmodified Python script: stepscope run -- python train.py ARGS",
    "demo": "profile a built-in workload before and after the advised fixes",
    "view": "open the web dashboard on a logdir or a trace (http://127.0.0.1:6006)",
    "memory": "analyse a CUDA memory snapshot (.pickle) or an export_memory_timeline file",
    "diff": "compare two runs (traces, folders or saved reports); --fail-on gates CI",
    "sql": "query a trace, a run of ranks or trtexec outputs with SQL (docs/sql.md)",
    "mcp": "serve report, findings, diff, sql and explain_metric to AI assistants (MCP, stdio)",
    "monitor": "monitor a run's system use and say what bounds it: "
               "stepscope monitor -- python train.py ARGS",
    "whatif": "replay a trace's steps with fixes applied: the predicted step before/after",
}
INTERRUPTED = "stepscope: interrupted"


class OptionError(Exception):
    """A command line argparse refused; ``str(err)`` is its one-line message."""


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a bad option is one line (no usage block) and no SystemExit."""

    def error(self, message: str) -> NoReturn:
        raise OptionError(f"{self.prog}: error: {one_line(message)} (see {self.prog} --help)")


def _load(name: str) -> ModuleType:
    return importlib.import_module(COMMANDS[name])


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="stepscope",
        description="Why is my model slow, and what exactly should I change?",
    )
    from stepscope import __version__

    parser.add_argument("--version", action="version", version=f"stepscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        sub.add_parser(name, help=HELPS[name], add_help=False)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if not args_list:  # no command: the usage, as an error (exit 2), not a success
        parser.print_help(sys.stderr)
        return 2
    if args_list[0] not in COMMANDS:
        try:
            parser.parse_args(args_list)
        except OptionError as exc:
            print(exc, file=sys.stderr)
        return 2
    _quiet_broken_pipe()
    name, rest = args_list[0], args_list[1:]
    try:
        module = _load(name)
    except ImportError as exc:
        from stepscope.cli.extras import install_hint, missing_extra

        extra = missing_extra(exc) if isinstance(exc, ModuleNotFoundError) else None
        hint = f": {install_hint(extra)}" if extra else ""
        print(f"stepscope {name}: cannot start ({exc}){hint}", file=sys.stderr)
        return 2
    sub = OneLineParser(prog=f"stepscope {name}", description=HELPS[name])
    module.add_arguments(sub)
    try:
        args = sub.parse_args(rest)
    except OptionError as exc:
        print(exc, file=sys.stderr)
        return 2
    try:
        code: int = module.run(args)
        return code
    except StepscopeError as exc:
        print(f"stepscope: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return 130
    except BrokenPipeError:  # `stepscope report x | head`
        return 0
    except Exception as exc:  # a bug of ours: one line for users, the traceback on request
        from stepscope.cli.extras import install_hint, missing_extra

        if isinstance(exc, ModuleNotFoundError) and (extra := missing_extra(exc)):
            # an optional extra is not installed: say which, as for any input error
            print(f"stepscope {name}: needs the '{extra}' extra ({exc.name} is not "
                  f"installed): {install_hint(extra)}", file=sys.stderr)
            return 2
        if os.environ.get("STEPSCOPE_DEBUG"):
            raise
        print(
            f"stepscope {name}: internal error ({type(exc).__name__}: {one_line(str(exc))}); "
            "rerun with STEPSCOPE_DEBUG=1 for the traceback and please report it",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _quiet_broken_pipe() -> None:
    """`stepscope report x | head`: a closed pipe ends the command quietly with exit 0.

    rich's Console meets a closed stdout in ``on_broken_pipe``, which silences stdout and
    exits 1: the exit code of a failed ``diff --fail-on`` gate. Raise BrokenPipeError there
    instead, which ``main`` turns into exit 0 (rich documents overriding this hook).
    """
    from rich.console import Console

    def on_broken_pipe(self: Console) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # nothing more reaches the closed pipe
        raise BrokenPipeError

    Console.on_broken_pipe = on_broken_pipe  # type: ignore[method-assign]


def _second_interrupt(signum: int, frame: object) -> None:
    os._exit(130)  # the user pressed Ctrl-C again while we clean up: leave at once


def entry_point() -> None:
    """The console script. Ctrl-C anywhere (imports, reading, worker pools, printing) ends
    in one line and exit 130; a second Ctrl-C during the cleanup exits immediately."""
    if not os.environ.get("STEPSCOPE_DEBUG"):
        # numpy's floating-point warnings ("overflow encountered", "All-NaN slice") name a
        # line of our code and tell the user nothing. The fuzz campaign calls main() and
        # fails on any, so the ones it can reach are found and fixed; this is for the rest.
        # STEPSCOPE_DEBUG=1 shows them.
        warnings.filterwarnings("ignore", category=RuntimeWarning)
    try:
        code = main()
    except KeyboardInterrupt:
        code = 130
        signal.signal(signal.SIGINT, _second_interrupt)
        with contextlib.suppress(OSError):
            print(INTERRUPTED, file=sys.stderr, flush=True)
    if code == 130:
        signal.signal(signal.SIGINT, _second_interrupt)
    sys.exit(code)
