"""``stepscope report`` on trtexec outputs (a file or a folder of one engine)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from stepscope.cli.options import tell_written
from stepscope.errors import UsageError
from stepscope.formats.tensorrt.load import load_trt_run
from stepscope.report.tensorrt import build_trt_report


def run_tensorrt(args: argparse.Namespace) -> int:
    if args.format not in ("text", "json"):  # e.g. an HTML format added for traces
        raise UsageError(
            f"{args.path}: --format {args.format} is not available for TensorRT runs; "
            "use text or json (the JSON has every figure under 'tensorrt'), or --html"
        )
    report = build_trt_report(
        load_trt_run(args.path), top=max(args.top, 0), nsys=getattr(args, "nsys", None)
    )
    if getattr(args, "html", None):
        import os

        from stepscope.report.html import render_document, write_page

        label = os.path.basename(os.path.normpath(args.path)) or "engine"
        write_page(render_document(report.to_json(), label,
                                   title=f"stepscope TensorRT report: {label}"), args.html)
        tell_written("HTML report", args.html)
    if args.format == "json":
        import msgspec

        sys.stdout.write(
            msgspec.json.format(msgspec.json.encode(report.to_json()), indent=2).decode() + "\n"
        )
    else:
        from stepscope.report.text.tensorrt import render_trt_text

        render_trt_text(report, Console())
    return 0
