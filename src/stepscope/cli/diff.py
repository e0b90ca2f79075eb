"""``stepscope diff BASE NEW``: compare two runs, optionally as a CI regression gate.

BASE and NEW are traces, folders of traces (captures pooled), or saved JSON reports
(``--baseline FILE`` names a stored report as BASE). ``--fail-on`` thresholds make the
exit status 1 when broken (one line per broken threshold on stderr), 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from stepscope.analysis.compare.diff import RunSummary, diff_runs
from stepscope.analysis.compare.gate import GateResult, evaluate, parse
from stepscope.analysis.compare.significance import ALPHA
from stepscope.cli.options import add_top, tell_written
from stepscope.errors import TraceFormatError, UsageError
from stepscope.io.source import read_source
from stepscope.report.json.diff import diff_to_json
from stepscope.units import count

REPORT, TRACE, FOLDER, TENSORRT = "report", "trace", "folder", "tensorrt"
KIND_WORDS = {
    REPORT: "a saved stepscope report",
    TRACE: "a PyTorch profiler trace",
    FOLDER: "a folder of traces",
    TENSORRT: "a TensorRT engine export",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="PATH",
        help="BASE and NEW: traces (.json[.gz]), folders of traces, or saved JSON reports; "
        "with --baseline only NEW",
    )
    parser.add_argument(
        "--baseline", metavar="FILE", help="a stored JSON report (stepscope report --format "
        "json, or diff --save-baseline) to use as BASE"
    )
    parser.add_argument(
        "--fail-on",
        action="append",
        default=[],
        metavar="EXPR",
        help="exit 1 when broken, e.g. 'step_time>+5%%', 'kernel:aten::mm>+10%%' "
        "(repeatable; docs/diff.md)",
    )
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: the terminal comparison; json: the stepscope.diff/1 "
                        "document (default: %(default)s)")
    parser.add_argument(
        "--html", default=None, metavar="OUT.html",
        help="also write the comparison as a single-file HTML page (opens offline)",
    )
    add_top(parser)
    parser.add_argument(
        "--alpha", type=float, default=ALPHA, help=f"significance level (default {ALPHA})"
    )
    parser.add_argument(
        "--save-baseline",
        metavar="FILE",
        help="write NEW's full report (every row, per-step kernel times) as the next baseline",
    )
    parser.add_argument("--no-cache", action="store_true", help="re-parse traces")


# ---------------------------------------------------------------- input kinds and dispatch


def input_kind(path: str) -> str:
    """What a path holds: REPORT, TRACE, FOLDER or TENSORRT (formats.kinds decides);
    a one-line error for anything diff does not compare."""
    from stepscope.formats import kinds

    kind = kinds.identify(path)
    pipeline = kind.pipeline(kinds.DIFF)
    if pipeline is not None:
        return pipeline
    if kind is kinds.EMPTY:
        raise TraceFormatError(f"{path}: file is empty")
    if kind is kinds.SAVED_DIFF:
        raise TraceFormatError(f"{path}: is a diff, not a run (give a trace or a report)")
    raise TraceFormatError(
        f"{path}: not a trace or a stepscope report (expected PyTorch profiler JSON or "
        "`stepscope report --format json` output)"
    )


@dataclass(frozen=True)
class Side:
    summary: RunSummary
    report: dict[str, Any] | None  # the full report JSON when the side is one trace


def _load(path: str, kind: str, use_cache: bool) -> Side:
    from stepscope.report import diff_load

    if kind == REPORT:
        return Side(diff_load.read_report(path, read_source(path).data), None)
    if kind == FOLDER:
        return Side(diff_load.summarise_folder(path, use_cache=use_cache), None)
    summary, doc = diff_load.trace_summary_and_report(path, use_cache=use_cache)
    return Side(summary, doc)


def _with_status(args: argparse.Namespace, path: str, work: Callable[[], Side]) -> Side:
    """Run ``work`` under a spinner on a terminal's stderr (text output only)."""
    from rich.console import Console

    err = Console(stderr=True)
    if args.format != "text" or not err.is_terminal:
        return work()
    with err.status(f"reading and analysing {path}…"):
        return work()


def _compare_tensorrt(base: str, new: str, args: argparse.Namespace) -> int:
    """Two TensorRT engines: layer latencies, precisions and fused groups side by side."""
    from stepscope.cli.pipelines.engine_diff import engine_diff, print_engine_diff

    if args.fail_on:
        raise UsageError(f"{base}, {new}: --fail-on gates training runs; it does not apply "
                         "to TensorRT engine comparisons")
    cmp, doc = engine_diff(base, new)
    if args.html is not None:
        _write_diff_html(args.html, doc, f"{base} vs {new}")
    return print_engine_diff(cmp, doc, fmt=args.format, top=args.top)


def _compare_runs(base: str, new: str, args: argparse.Namespace) -> int:
    use_cache = not args.no_cache
    b = _with_status(args, base, lambda: _load(base, args.base_kind, use_cache))
    n = _with_status(args, new, lambda: _load(new, args.new_kind, use_cache))
    try:
        diff = diff_runs(b.summary, n.summary, alpha=args.alpha)
    except ValueError as exc:  # the reason names the runs when it is about one of them
        named = base in str(exc) or new in str(exc)
        raise UsageError(f"incompatible runs: {exc}" if named
                         else f"{base} vs {new}: incompatible runs ({exc})") from None
    gate = evaluate(diff, args.thresholds)
    if args.save_baseline is not None:
        _save_baseline(args.save_baseline, new, n)
    if args.html is not None:
        _write_diff_html(args.html, diff_to_json(diff, gate), f"{base} vs {new}")
    if args.format == "json":
        from stepscope.report.json.diff import render_diff_json

        sys.stdout.write(render_diff_json(diff, gate) + "\n")
    else:
        from rich.console import Console

        from stepscope.report.text.diff import render_diff_text

        render_diff_text(diff, Console(), top=args.top, gate=gate)
    return _gate_exit(gate)


COMPARERS: dict[str, Callable[[str, str, argparse.Namespace], int]] = {
    TRACE: _compare_runs,
    REPORT: _compare_runs,
    FOLDER: _compare_runs,
    TENSORRT: _compare_tensorrt,
}
RUN_KINDS = frozenset({TRACE, REPORT, FOLDER})  # any two of these compare with each other


def pick_comparer(
    base: str, base_kind: str, new: str, new_kind: str
) -> Callable[[str, str, argparse.Namespace], int]:
    """The comparison for a pair of inputs; different kinds of files are refused."""
    if base_kind == new_kind or (base_kind in RUN_KINDS and new_kind in RUN_KINDS):
        return COMPARERS[base_kind]
    raise UsageError(
        f"cannot compare {KIND_WORDS[base_kind]} ({base}) with {KIND_WORDS[new_kind]} ({new})"
    )


# ---------------------------------------------------------------- output


def _check_outputs(args: argparse.Namespace) -> None:
    from stepscope.io.output import unwritable

    if args.html is not None:
        from stepscope.report.html import check_html_output

        check_html_output(args.html)
    if args.save_baseline is not None:
        problem = unwritable(args.save_baseline)
        if problem is not None:
            raise UsageError(f"--save-baseline {args.save_baseline!r}: cannot write ({problem})"
                             if not args.save_baseline else
                             f"--save-baseline {args.save_baseline}: cannot write ({problem})")


def _save_baseline(out: str, new: str, side: Side) -> None:
    from stepscope.io.output import write_atomic
    from stepscope.report.diff_load import baseline_json

    if side.report is None:
        raise UsageError(f"--save-baseline: NEW ({new}) must be a single trace")
    try:
        write_atomic(out, msgspec.json.encode(baseline_json(side.report, side.summary)))
    except OSError as exc:
        raise UsageError(f"--save-baseline {out}: cannot write ({exc.strerror})") from None


def _write_diff_html(out: str, doc: dict[str, Any], label: str) -> None:
    from stepscope.report.html import render_document, write_page

    write_page(render_document(doc, label, title=f"stepscope diff: {label}"), out)
    tell_written("HTML comparison", out)


def _gate_exit(gate: list[GateResult]) -> int:
    broken = [g for g in gate if g.broken]
    for g in broken:
        print(f"stepscope diff: FAIL {g.reason}", file=sys.stderr)
    return 1 if broken else 0


def run(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if args.baseline:
        if len(paths) != 1:
            raise UsageError("with --baseline FILE give only NEW (one path)")
        paths.insert(0, args.baseline)
    elif len(paths) != 2:
        raise UsageError(f"expected BASE and NEW, got {count(len(paths), 'path')}")
    if not 0.0 < args.alpha < 1.0:
        raise UsageError(f"--alpha {args.alpha}: must be between 0 and 1")
    args.thresholds = [parse(t) for t in args.fail_on]
    _check_outputs(args)  # a bad output path fails now, not after reading both runs
    base, new = paths
    base_kind, new_kind = input_kind(base), input_kind(new)
    if args.baseline and base_kind != REPORT:
        raise UsageError(
            f"--baseline {base}: expected a saved JSON report, got {KIND_WORDS[base_kind]}"
        )
    if args.save_baseline is not None and new_kind != TRACE:
        raise UsageError(f"--save-baseline: NEW ({new}) must be a single trace, not "
                         f"{KIND_WORDS[new_kind]}")
    args.base_kind, args.new_kind = base_kind, new_kind
    return pick_comparer(base, base_kind, new, new_kind)(base, new, args)
