"""``stepscope run [options] -- python train.py ARGS``: profile an unmodified program.

The program runs in a child Python process (so its stdout, stderr and exit code are its
own) whose bootstrap installs ``stepscope.capture.autostep`` around the script; when it
ends, the newest trace it wrote is read back and the report printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import stepscope
from stepscope.cli.options import add_top, check_output_dir, positive_float
from stepscope.errors import StepscopeError, UsageError, one_line

HELP = "profile an unmodified Python script: stepscope run -- python train.py ARGS"

_PYTHON = re.compile(r"^(python|pypy)[0-9.]*(\.exe)?$")
_OPTS_WITH_VALUE = {"-W", "-X", "-Q"}
_PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(stepscope.__file__)))
# Runs as ``python -c``; falls back to this stepscope when the target interpreter's own
# environment has none (appended, so it never shadows the user's packages).
def bootstrap(module: str) -> str:
    """``python -c`` code that runs ``stepscope.capture.<module>.main(argv)``."""
    return ("import sys\n"
            "try:\n"
            f"    from stepscope.capture.{module} import main\n"
            "except ImportError:\n"
            f"    sys.path.append({_PACKAGE_ROOT!r})\n"
            f"    from stepscope.capture.{module} import main\n"
            "sys.exit(main(sys.argv[1:]))\n")


BOOTSTRAP = bootstrap("runner")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "stepscope run [options] -- python SCRIPT.py ARGS | python -m MODULE ARGS"
    parser.add_argument("--logdir", default="stepscope-logs",
                        help="where traces go: LOGDIR/RUN/ (local path or fsspec URL; "
                             "default: %(default)s)")
    parser.add_argument("--run", default=None,
                        help="run folder name (default: script name and start time)")
    parser.add_argument("--wait", type=int, default=1, metavar="N",
                        help="optimizer steps to skip before warming up (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=1, metavar="N",
                        help="steps profiled but discarded (default: %(default)s)")
    parser.add_argument("--active", type=int, default=3, metavar="N",
                        help="steps recorded (default: %(default)s)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="cycles of wait/warmup/active, 0 = until the end "
                             "(default: %(default)s)")
    parser.add_argument("--window", type=float, default=2.0, metavar="SECONDS",
                        help="for programs without optimizer steps: seconds recorded "
                             "(default: %(default)s)")
    parser.add_argument("--no-shapes", action="store_true", help="do not record input shapes")
    parser.add_argument("--no-memory", action="store_true", help="do not record memory")
    parser.add_argument("--no-stack", action="store_true", help="do not record Python stacks")
    parser.add_argument("--no-report", action="store_true",
                        help="only write the trace; do not print the report")
    parser.add_argument("--monitor", action="store_true",
                        help="also monitor the run (stepscope monitor): monitor.json and "
                             "monitor.parquet beside the trace, and the verdict")
    parser.add_argument("--hz", type=positive_float, default=10.0,
                        help="with --monitor: samples per second (default: %(default)s)")
    add_top(parser)
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the program: python train.py ARGS (after --)")


@dataclass(frozen=True)
class ChildCommand:
    argv: list[str]
    description: str  # what is being profiled, for messages


def build_command(command: list[str], *, code: str = BOOTSTRAP,
                  name: str = "run") -> ChildCommand:
    """``python [opts] script.py args`` -> ``python [opts] -c BOOTSTRAP script.py args``."""
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise UsageError(f"stepscope {name}: give the program after --, "
                         f"e.g. stepscope {name} -- python train.py --epochs 1")
    head = command[0]
    if _PYTHON.match(os.path.basename(head)):
        interpreter = shutil.which(head) or head
        if not os.path.exists(interpreter):
            raise UsageError(f"interpreter not found: {head}")
        rest = command[1:]
    elif head.endswith(".py") or head == "-m":
        interpreter, rest = sys.executable, command
    else:
        raise UsageError(f"stepscope {name} runs Python programs: "
                         f"stepscope {name} -- python train.py ARGS (got {head!r})")
    options: list[str] = []
    i = 0
    while i < len(rest) and rest[i].startswith("-") and rest[i] != "-m":
        if rest[i] in ("-c", "-"):
            raise UsageError("put the code in a file; "
                             f"`python -c` and stdin cannot be run by stepscope {name}")
        take = 2 if rest[i] in _OPTS_WITH_VALUE else 1
        options += rest[i:i + take]
        i += take
    target = rest[i:]
    if not target or (target[0] == "-m" and len(target) < 2):
        raise UsageError("no script or -m module given")
    if target[0] != "-m" and not os.path.isfile(target[0]):
        raise UsageError(f"no such script: {target[0]}")
    description = f"-m {target[1]}" if target[0] == "-m" else target[0]
    return ChildCommand([interpreter, *options, "-c", code, *target], description)


def child_settings(args: argparse.Namespace) -> dict[str, Any]:
    if min(args.wait, args.warmup, args.repeat) < 0 or args.active < 1 or args.window <= 0:
        raise UsageError("--wait/--warmup/--repeat must be >= 0, "
                         "--active >= 1 and --window > 0")
    return {"logdir": args.logdir, "run": args.run, "wait": args.wait, "warmup": args.warmup,
            "active": args.active, "repeat": args.repeat, "window_s": args.window,
            "record_shapes": not args.no_shapes, "profile_memory": not args.no_memory,
            "with_stack": not args.no_stack}


def run(args: argparse.Namespace) -> int:
    child = build_command(list(args.command))
    settings = child_settings(args)
    # found out after the program, a long training run would be profiled for nothing
    check_output_dir("--logdir", args.logdir)
    watch = _Watch(args) if args.monitor else None
    fd, manifest = tempfile.mkstemp(prefix="stepscope-run-", suffix=".json")
    os.close(fd)
    try:
        env = dict(os.environ)
        env["STEPSCOPE_RUN_CONFIG"] = json.dumps({**settings, "manifest": manifest})
        if watch is not None:
            env.update(watch.env())
        code = _wait_for(child.argv, env, watch)
        outcome = _read_manifest(manifest)
    finally:
        os.unlink(manifest)
        if watch is not None:
            watch.close()
    _report(outcome, args)
    if watch is not None:
        watch.report(outcome, args, code)
    return code


class _Watch:
    """``--monitor``: the shared page of the phase hooks and the sampler's results."""

    def __init__(self, args: argparse.Namespace) -> None:
        from stepscope.io.source import is_url

        if is_url(args.logdir):
            raise UsageError("--monitor writes its files locally: give a local --logdir")
        if not 0 < args.hz <= 100:
            raise UsageError(f"--hz must be at most 100 (got {args.hz:g})")
        from stepscope.capture.monitor import phases

        fd, self.page = tempfile.mkstemp(prefix="stepscope-monitor-", suffix=".page")
        os.close(fd)
        phases.create(self.page)
        self.hz = args.hz
        self.sampler: Any = None
        self.started = 0.0
        self.duration = 0.0

    def env(self) -> dict[str, str]:
        from stepscope.capture.monitor.child import CONFIG_ENV

        return {CONFIG_ENV: json.dumps({"board": self.page})}

    def wait(self, proc: subprocess.Popen[bytes]) -> int:
        import time

        from stepscope.capture.monitor.sampler import Sampler

        self.started = time.monotonic()
        self.sampler = Sampler(proc.pid, self.page, self.hz)
        try:
            self.sampler.run_until(lambda: proc.poll() is not None)
        finally:
            self.sampler.close()
        code = proc.wait()
        self.duration = time.monotonic() - self.started
        return code

    def close(self) -> None:
        if os.path.exists(self.page):
            os.unlink(self.page)

    def report(self, outcome: dict[str, Any], args: argparse.Namespace, code: int) -> None:
        from stepscope.capture import paths
        from stepscope.capture.monitor import store
        from stepscope.capture.monitor.output import JSON_NAME, finish

        traces: list[str] = outcome.get("traces", [])
        run_dir = (os.path.dirname(traces[-1]) if traces else
                   os.path.join(args.logdir, paths.safe_name(args.run or "run") + "_monitor"))
        samples = store.samples_of(self.sampler, command=" ".join(args.command).lstrip("- "),
                                   duration_s=self.duration)
        print(file=sys.stdout)
        finish(samples, run_dir, exit_code=code, stream=sys.stdout)
        print(f"stepscope run: monitor written to {os.path.join(run_dir, JSON_NAME)}",
              file=sys.stderr)


def _wait_for(argv: list[str], env: dict[str, str], watch: _Watch | None = None) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        proc = subprocess.Popen(argv, env=env)
    except OSError as exc:
        raise UsageError(f"cannot start {argv[0]}: {exc.strerror}") from None
    # Ctrl-C reaches the child too (same process group); it stops, writes what it has and
    # exits, and we still print that report.
    with _ignoring_sigint():
        code = proc.wait() if watch is None else watch.wait(proc)
    return 128 - code if code < 0 else code


@contextmanager
def _ignoring_sigint() -> Iterator[None]:
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread (embedded use): nothing to do
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _read_manifest(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data: dict[str, Any] = json.load(fh)
            return data
    except (OSError, ValueError):
        # The child died before it could say anything (killed, os._exit, crash in C).
        return {"mode": "unknown", "traces": [], "note": "the program ended without "
                "stepscope finishing (killed or os._exit?)"}


def _report(outcome: dict[str, Any], args: argparse.Namespace) -> None:
    traces: list[str] = outcome.get("traces", [])
    if not traces:
        print(f"stepscope run: no trace written: {outcome.get('note') or 'nothing recorded'}",
              file=sys.stderr)
        return
    newest = traces[-1]
    how = ("one step per optimizer step" if outcome.get("mode") == "steps"
           else f"a {args.window:g} s window: no optimizer step was seen")
    if len(traces) == 1:
        print(f"\nstepscope run: trace written to {newest} ({how})", file=sys.stderr,
              flush=True)
    else:  # --repeat: every capture, each whole on its own line; the report is the newest's
        print(f"\nstepscope run: {len(traces)} traces written, one per cycle ({how}):",
              *(f"  {t}" for t in traces), sep="\n", file=sys.stderr)
        print("stepscope run: all of them: stepscope report "
              f"{shlex.quote(os.path.dirname(newest) or '.')}"
              + ("" if args.no_report else "; below, the newest"), file=sys.stderr, flush=True)
    if args.no_report:
        return
    try:
        from stepscope.report.build import build_report
        from stepscope.report.text.render import render_text

        render_text(build_report(stepscope.load(newest), top=args.top))
    except StepscopeError as exc:
        print(f"stepscope run: cannot report on {newest}: {one_line(str(exc))}",
              file=sys.stderr)
    except Exception as exc:  # a reporting bug must not replace the program's exit code
        print(f"stepscope run: report failed on {newest} ({type(exc).__name__}: "
              f"{one_line(str(exc))}); the trace is intact", file=sys.stderr)
