"""Compare two TensorRT engines from their trtexec outputs (for ``stepscope diff A B``).

Not a subcommand on its own: ``stepscope diff`` calls :func:`engine_diff` and
:func:`print_engine_diff` when both paths are trtexec outputs
(``formats.kinds`` says so). :func:`engine_diff` is the one place that
builds the ``stepscope.tensorrt-diff/1`` document, so ``--format json`` and ``--html``
carry the same one.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import Any

from rich.console import Console

from stepscope.analysis.tensorrt.diff import EngineComparison, compare_engines
from stepscope.analysis.tensorrt.engine import analyse_tensorrt
from stepscope.formats.tensorrt.load import load_trt_run
from stepscope.report import DEFAULT_TOP

SCHEMA = "stepscope.tensorrt-diff/1"


def engine_diff(a: str, b: str) -> tuple[EngineComparison, dict[str, Any]]:
    """The comparison of engines ``a`` (baseline) and ``b``, and its JSON document."""
    cmp = compare_engines(analyse_tensorrt(load_trt_run(a)), analyse_tensorrt(load_trt_run(b)))
    if cmp.a_name == cmp.b_name:  # "A: x vs B: x" tells nothing: say where each one is
        a_name, b_name = distinct_labels(a, b, cmp.a_name)
        cmp = dataclasses.replace(cmp, a_name=a_name, b_name=b_name)
    return cmp, {"schema": SCHEMA, "a": a, "b": b, "tensorrt_diff": cmp.to_json()}


def distinct_labels(a: str, b: str, name: str) -> tuple[str, str]:
    """Two engines of one name told apart by the shortest end of their folders that differs:
    ('A100/fp32/resnet.onnx.engine.profile.json', 'A100/fp16/...') -> ('fp32/resnet…',
    'fp16/resnet…'); the paths themselves when nothing but the name is shared."""
    parts = [os.path.normpath(os.path.abspath(p)).split(os.sep) for p in (a, b)]
    folders = [p[:-1] if os.path.isfile(path) else p for p, path in zip(parts, (a, b),
                                                                            strict=True)]
    for k in range(1, max(len(f) for f in folders) + 1):
        ends = ["/".join(f[-k:]) for f in folders]
        if ends[0] != ends[1]:
            return f"{ends[0]}/{name}", f"{ends[1]}/{name}"
    return a, b


def print_engine_diff(
    cmp: EngineComparison, doc: dict[str, Any], *, fmt: str = "text", top: int = DEFAULT_TOP
) -> int:
    if fmt == "json":
        import msgspec

        sys.stdout.write(msgspec.json.format(msgspec.json.encode(doc), indent=2).decode() + "\n")
    else:
        from stepscope.report.text.tensorrt_diff import render_engine_diff

        render_engine_diff(cmp, Console(), top=top)
    return 0


def run_tensorrt_diff(a: str, b: str, *, fmt: str = "text", top: int = DEFAULT_TOP) -> int:
    cmp, doc = engine_diff(a, b)
    return print_engine_diff(cmp, doc, fmt=fmt, top=top)
