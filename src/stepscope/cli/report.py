"""``stepscope report PATH``: analyse one trace and print the report."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

from stepscope.analysis.efficiency.roofline import Overrides
from stepscope.cli.options import add_top
from stepscope.errors import TraceFormatError, UsageError
from stepscope.formats import load_trace
from stepscope.report.build import build_report
from stepscope.report.text.views import VIEWS

if TYPE_CHECKING:
    from stepscope.model.trace import Trace
    from stepscope.report.build import Report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="+",
        help="trace file (.json, .json.gz, nsys .sqlite/.nsys-rep, ncu .csv, trtexec outputs) or "
        "URL (s3://, gs://, az://, ...); a directory, a cloud prefix or several files: the "
        "ranks of a run, or one process's captures (docs/cli.md, Folders)",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: the terminal report; json: the stepscope.report/1 document for scripts "
        "and CI (default: %(default)s)",
    )
    parser.add_argument(
        "--view",
        choices=VIEWS,
        default="summary",
        help="text sections: summary (findings, breakdown, GPU, top tables), operators "
        "(by name and by input shape), kernels (launch configuration), all "
        "(default: %(default)s)",
    )
    add_top(parser)
    parser.add_argument(
        "--step", type=int, default=None, metavar="N", help="analyse only ProfilerStep#N"
    )
    parser.add_argument(
        "--window", default=None, metavar="NAME[#N]",
        help="critical path and replays over the N-th (from 0) host range whose name "
        "contains NAME (an annotation, ProfilerStep#2, ...) instead of every step")
    parser.add_argument(
        "--html", default=None, metavar="OUT.html",
        help="also write a single-file HTML report (opens offline from file://)",
    )
    parser.add_argument(
        "--peak-tflops", type=float, default=None, metavar="TFLOPS",
        help="peak TFLOP/s of the device for every dtype (overrides the GPU peak table)",
    )
    parser.add_argument(
        "--peak-gbps", type=float, default=None, metavar="GBPS",
        help="peak memory bandwidth in GB/s (overrides the GPU peak table)",
    )
    parser.add_argument(
        "--nsys",
        default=None,
        metavar="SQLITE",
        help="TensorRT runs: nsys SQLite export of the same run, for per-layer GPU time",
    )
    parser.add_argument(
        "--ncu", default=None, metavar="CSV",
        help="Nsight Compute CSV export (ncu --csv) to join by kernel name",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="re-parse the trace instead of using the Arrow cache",
    )
    from stepscope.cli.pipelines.ranks import add_run_arguments

    add_run_arguments(parser)


# The report's pipelines (formats.kinds names which one each input kind takes).
TRACE, TENSORRT, RANKS, NCU = "trace", "tensorrt", "ranks", "ncu"
PIPELINE_WORDS = {TRACE: "one trace", TENSORRT: "TensorRT engine outputs",
                  RANKS: "a run of many ranks", NCU: "an Nsight Compute export on its own"}
# (attribute, flag, default, the pipelines that use it): given elsewhere it would be
# ignored without a word, and the user would believe e.g. that --step 5 was analysed
ONLY_FOR: tuple[tuple[str, str, object, frozenset[str]], ...] = (
    ("step", "--step", None, frozenset({TRACE})),
    ("window", "--window", None, frozenset({TRACE})),
    ("view", "--view", "summary", frozenset({TRACE})),
    ("peak_tflops", "--peak-tflops", None, frozenset({TRACE})),
    ("peak_gbps", "--peak-gbps", None, frozenset({TRACE})),
    ("ncu", "--ncu", None, frozenset({TRACE})),
    ("nsys", "--nsys", None, frozenset({TENSORRT})),
    ("html", "--html", None, frozenset({TRACE, TENSORRT, RANKS})),
    ("executor", "--executor", "processes", frozenset({RANKS})),
    ("workers", "--workers", None, frozenset({RANKS})),
    ("scheduler", "--scheduler", None, frozenset({RANKS})),
    ("link_gbps", "--link-gbps", None, frozenset({RANKS})),
)


def check_options_apply(args: argparse.Namespace, pipeline: str) -> None:
    """Refuse an option that the report's pipeline for this input does not use."""
    paths = args.path if isinstance(args.path, list) else [args.path]
    label = paths[0] if len(paths) == 1 else f"{paths[0]} (and {len(paths) - 1} more)"
    for attr, flag, default, pipelines in ONLY_FOR:
        if pipeline not in pipelines and getattr(args, attr, default) != default:
            uses = " or ".join(PIPELINE_WORDS[k] for k in sorted(pipelines))
            raise UsageError(f"{label}: {flag} does not apply to {PIPELINE_WORDS[pipeline]} "
                             f"(only to {uses})")


def peak_overrides(tflops: float | None, gbps: float | None) -> Overrides:
    for flag, value in (("--peak-tflops", tflops), ("--peak-gbps", gbps)):
        if value is not None and not (value > 0 and math.isfinite(value)):
            raise UsageError(f"{flag} must be a positive number, got {value}")
    return Overrides(tflops=tflops, gbps=gbps)


def run(args: argparse.Namespace) -> int:
    from stepscope.formats import kinds
    from stepscope.heap import reuse_freed_memory

    reuse_freed_memory()  # a one-shot command: freed memory is reused, never handed back

    if args.html is not None:  # a bad output path fails now, not after the analysis
        from stepscope.report.html import check_html_output

        check_html_output(args.html)
    if args.format == "json" and args.view != "summary":
        raise UsageError(f"--view {args.view} chooses text sections; --format json prints "
                         "every section (drop --view)")
    kind = kinds.identify(args.path)
    pipeline = kind.pipeline(kinds.REPORT)
    if pipeline is None:
        from stepscope.formats.load import not_a_trace

        raise TraceFormatError(not_a_trace(args.path[0], kind))
    check_options_apply(args, pipeline)
    return PIPELINES[pipeline](args)


def _run_tensorrt(args: argparse.Namespace) -> int:
    """trtexec exports/log (a file or a folder of them): the TensorRT report."""
    from stepscope.cli.pipelines.engine import run_tensorrt

    args.path = args.path[0]
    return run_tensorrt(args)


def _run_ncu(args: argparse.Namespace) -> int:
    """An Nsight Compute export on its own: its kernels only."""
    from stepscope.cli.pipelines.ncu_only import run_ncu_only
    from stepscope.formats.nsight.ncu import load_ncu

    return run_ncu_only(load_ncu(args.path[0]), args.format, args.top)


def _run_ranks(args: argparse.Namespace) -> int:
    """A directory, prefix or several files: the run of many ranks."""
    from stepscope.cli.pipelines.ranks import run_many

    return run_many(args)


def _run_trace(args: argparse.Namespace) -> int:
    """One trace (Kineto JSON, nsys export): the full report."""
    from stepscope.formats.nsight.ncu import load_ncu

    args.path = args.path[0]
    ncu = load_ncu(args.ncu) if getattr(args, "ncu", None) else None
    peaks = peak_overrides(args.peak_tflops, args.peak_gbps)  # before reading a large file
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
    report = report_of(trace, top=args.top, step=args.step, peaks=peaks, ncu=ncu,
                       window=args.window)
    if args.html:
        from stepscope.cli.options import tell_written
        from stepscope.report.html import write_html

        write_html(report, args.html)
        tell_written("HTML report", args.html)
    if args.format == "json":
        from stepscope.report.json.render import render_json

        sys.stdout.write(render_json(report) + "\n")
    else:
        from stepscope.report.text.render import render_text

        render_text(report, Console(), view=args.view)
    return 0


def report_of(trace: Trace, **kw: Any) -> Report:
    """A trace's full report, with the memory timeline exported beside it (if any)."""
    from stepscope.formats.memory.timeline import timeline_beside

    trace, timeline = timeline_beside(trace)
    return build_report(trace, memory_timeline=timeline, **kw)


PIPELINES: dict[str, Callable[[argparse.Namespace], int]] = {
    TRACE: _run_trace, TENSORRT: _run_tensorrt, RANKS: _run_ranks, NCU: _run_ncu,
}
