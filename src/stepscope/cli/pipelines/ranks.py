"""``stepscope report DIR|PREFIX|FILES...``: the run of many ranks, or one process's captures."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from stepscope.cli.options import positive_float, positive_int
from stepscope.errors import UsageError
from stepscope.parallel.executor import EXECUTORS

if TYPE_CHECKING:
    from stepscope.report.run import RunReport
    from stepscope.report.spans import SpansReport


def add_run_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("runs of many ranks (a directory, prefix or several files)")
    group.add_argument("--executor", choices=EXECUTORS, default="processes",
                       help="where per-rank work runs (default: processes)")
    group.add_argument("--workers", type=positive_int, default=None, metavar="N",
                       help="worker processes (pool or Dask LocalCluster; default: CPU count)")
    group.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="address of an existing Dask scheduler (implies --executor dask)")
    group.add_argument("--link-gbps", type=positive_float, default=None, metavar="GBPS",
                       help="peak bandwidth of the collectives' link per rank (GB/s): adds "
                       "%% of link peak to the collectives (bus bandwidth / peak)")


def run_many(args: argparse.Namespace) -> int:
    from stepscope.report.run import RunReport, build_folder_report, find_run

    executor = "dask" if args.scheduler else args.executor
    run = find_run(args.path)
    err = Console(stderr=True)
    common = dict(executor=executor, workers=args.workers, scheduler=args.scheduler,
                  use_cache=not args.no_cache, link_gbps=args.link_gbps)
    if args.format == "text" and err.is_terminal:
        with Progress(TextColumn("traces"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn(), console=err, transient=True) as progress:
            task = progress.add_task("ranks", total=len(run.paths))

            def tick(done: int, total: int) -> None:
                progress.update(task, completed=done, total=total)

            report = build_folder_report(run, progress=tick, **common)
    else:
        report = build_folder_report(run, **common)
    if args.html:
        if isinstance(report, RunReport):
            _write_run_html(report, args.html)
        else:
            _write_capture_html(report, args.html, top=args.top, use_cache=not args.no_cache)
    if args.format == "json":
        import msgspec

        sys.stdout.write(msgspec.json.format(msgspec.json.encode(report.to_json()),
                                             indent=2).decode() + "\n")
    elif isinstance(report, RunReport):
        from stepscope.report.text.distributed import render_run_text

        render_run_text(report, Console(), top=max(args.top, 0))
    else:
        from stepscope.report.text.distributed import render_spans_text

        render_spans_text(report, Console())
    return 0


def _write_capture_html(report: SpansReport, out: str, *, top: int, use_cache: bool) -> None:
    """A folder of one capture (what `stepscope run` writes): that capture's report, as
    `stepscope report FILE --html` writes it (the monitor output beside it included). Several
    captures have no one page: each file is its own report."""
    if len(report.spans) != 1:
        names = ", ".join(s.path.rstrip("/").rsplit("/", 1)[-1] for s in report.spans[:3])
        more = ", ..." if len(report.spans) > 3 else ""
        raise UsageError(f"{report.run.location}: --html writes one capture's report or a run "
                         f"of ranks; these are {len(report.spans)} captures of "
                         f"{report.layout.process}: give one capture's file ({names}{more})")
    from stepscope.cli.options import tell_written
    from stepscope.cli.report import report_of
    from stepscope.formats import load_trace
    from stepscope.report.html import write_html

    trace = load_trace(report.spans[0].path, use_cache=use_cache)
    write_html(report_of(trace, top=top), out)
    tell_written("HTML report", out)


def _write_run_html(report: RunReport, out: str) -> None:
    """The run's Distributed page (and its findings) as one offline HTML file."""
    import os

    from stepscope.cli.options import tell_written
    from stepscope.report.html import render_document, write_page

    label = os.path.basename(report.run.location.rstrip("/")) or report.run.location
    write_page(render_document(report.to_json(), label, title=f"stepscope run: {label}"), out)
    tell_written("HTML report", out)
