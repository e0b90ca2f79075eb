"""Compare two TensorRT engines from their trtexec outputs (for ``stepscope diff A B``).

Not a subcommand on its own: ``stepscope diff`` calls :func:`run_tensorrt_diff` when both
paths are trtexec outputs (``formats.trtexec_load.is_trtexec_output``).
"""

from __future__ import annotations

import sys

from rich.console import Console

from stepscope.analysis.tensorrt import analyse_tensorrt
from stepscope.analysis.tensorrt_diff import compare_engines
from stepscope.formats.trtexec_load import load_trt_run


def run_tensorrt_diff(a: str, b: str, *, fmt: str = "text", top: int = 15) -> int:
    cmp = compare_engines(analyse_tensorrt(load_trt_run(a)), analyse_tensorrt(load_trt_run(b)))
    if fmt == "json":
        import msgspec

        doc = {
            "schema": "stepscope.tensorrt-diff/1",
            "a": a,
            "b": b,
            "tensorrt_diff": cmp.to_json(),
        }
        sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n")
    else:
        from stepscope.report.text_tensorrt_diff import render_engine_diff

        render_engine_diff(cmp, Console(), top=top)
    return 0
