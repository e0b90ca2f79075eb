"""``stepscope monitor [options] -- python train.py ARGS``: what bounds a run, from outside.

The program runs unmodified in a child Python process (its stdout, stderr and exit code
are its own; with ``--format json`` its stdout goes to our stderr so that stdout holds
only the JSON) with the phase hooks of ``capture.monitor.phases``; this process samples
it at ``--hz`` until it ends, then writes ``monitor.json`` (``stepscope.monitor/1``) and
``monitor.parquet`` (the samples) to LOGDIR/RUN/ and prints the verdict.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING

from stepscope.cli.options import check_output_dir, positive_float
from stepscope.cli.run import _ignoring_sigint, bootstrap, build_command
from stepscope.errors import UsageError

if TYPE_CHECKING:
    from stepscope.capture.monitor.sampler import Sampler

HELP = "monitor a run's system use and say what bounds it: stepscope monitor -- python train.py"
MAX_HZ = 100.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.usage = "stepscope monitor [options] -- python SCRIPT.py ARGS | python -m MODULE ARGS"
    parser.add_argument("--hz", type=positive_float, default=10.0,
                        help=f"samples per second (default: %(default)s; at most {MAX_HZ:g})")
    parser.add_argument("--logdir", default="stepscope-logs",
                        help="where the files go: LOGDIR/RUN/monitor.{json,parquet} "
                             "(default: %(default)s)")
    parser.add_argument("--run", default=None,
                        help="run folder name (default: script name and start time)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text (default) or json on stdout (the program's own stdout "
                             "then goes to stderr)")
    parser.add_argument("command", nargs=argparse.REMAINDER,
                        help="the program: python train.py ARGS (after --)")


def run(args: argparse.Namespace) -> int:
    from stepscope.capture.monitor import phases
    from stepscope.capture.monitor.child import CONFIG_ENV
    from stepscope.capture.monitor.sampler import Sampler

    if args.hz > MAX_HZ:
        raise UsageError(f"--hz must be at most {MAX_HZ:g} (got {args.hz:g})")
    child = build_command(list(args.command), code=bootstrap("monitor.child"), name="monitor")
    run_dir = _run_dir(args, child.description)
    check_output_dir("--logdir", args.logdir)
    fd, board = tempfile.mkstemp(prefix="stepscope-monitor-", suffix=".page")
    os.close(fd)
    try:
        phases.create(board)
        env = dict(os.environ)
        env[CONFIG_ENV] = json.dumps({"board": board})
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.monotonic()
        stdout = _stderr_fd() if args.format == "json" else None
        try:
            proc = subprocess.Popen(child.argv, env=env, stdout=stdout)
        except OSError as exc:
            raise UsageError(f"cannot start {child.argv[0]}: {exc.strerror}") from None
        with _ignoring_sigint():  # Ctrl-C stops the program; we still report
            sampler = Sampler(proc.pid, board, args.hz)
            try:
                sampler.run_until(lambda: proc.poll() is not None)
            finally:
                sampler.close()
            code = proc.wait()
        duration = time.monotonic() - started
    finally:
        os.unlink(board)
    code = 128 - code if code < 0 else code
    _report(sampler, args, run_dir, " ".join(args.command).lstrip("- "), duration, code)
    return code


def _stderr_fd() -> int:
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by a file-less stream
        return 2


def _run_dir(args: argparse.Namespace, description: str) -> str:
    from stepscope.capture import paths

    if args.run:
        name = paths.safe_name(args.run)
    else:
        script = os.path.splitext(os.path.basename(description.split()[-1]))[0] or "python"
        name = paths.safe_name(f"{script}_monitor_{time.strftime('%Y%m%d-%H%M%S')}")
    return os.path.join(args.logdir, name)


def _report(sampler: Sampler, args: argparse.Namespace, run_dir: str, command: str,
            duration: float, code: int) -> None:
    from stepscope.capture.monitor import store
    from stepscope.capture.monitor.output import JSON_NAME, finish

    samples = store.samples_of(sampler, command=command, duration_s=duration)
    finish(samples, run_dir, exit_code=code, fmt=args.format, stream=sys.stdout)
    if args.format == "text":
        print(f"written: {os.path.join(run_dir, JSON_NAME)}", file=sys.stderr)
