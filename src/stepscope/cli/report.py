"""``stepscope report PATH``: analyse one trace and print the report."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from stepscope.formats import load_trace
from stepscope.report.build import build_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="+",
        help="trace file (.json, .json.gz) or URL (s3://, gs://, az://, ...); a directory, "
        "a cloud prefix or several files make a run of many ranks",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text")
    parser.add_argument(
        "--top",
        type=int,
        default=15,
        metavar="N",
        help="rows in operator/kernel tables (default 15)",
    )
    parser.add_argument(
        "--step", type=int, default=None, metavar="N", help="analyse only ProfilerStep#N"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="re-parse the trace instead of using the Arrow cache",
    )
    from stepscope.cli.report_run import add_run_arguments

    add_run_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from stepscope.cli.report_run import is_run_args, run_many

    if is_run_args(args):
        return run_many(args)
    args.path = args.path[0]
    err = Console(stderr=True)
    show_progress = args.format == "text" and err.is_terminal
    if show_progress:
        with Progress(
            TextColumn("reading"),
            BarColumn(),
            DownloadColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=True,
        ) as progress:
            task = progress.add_task("read", total=None)

            def tick(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            trace = load_trace(args.path, use_cache=not args.no_cache, progress=tick)
    else:
        trace = load_trace(args.path, use_cache=not args.no_cache)
    report = build_report(trace, top=max(args.top, 0), step=args.step)
    if args.format == "json":
        from stepscope.report.json_out import render_json

        sys.stdout.write(render_json(report) + "\n")
    else:
        from stepscope.report.text import render_text

        render_text(report, Console())
    return 0
