"""TensorRT engines in the dashboard: the report `stepscope report DIR --format json` gives."""

from __future__ import annotations

from typing import Any

TRT_TOP = 1000  # layer and table rows the dashboard receives


def is_trtexec_run(path: str) -> bool:
    """True when the file holds a trtexec output (the input-kind registry decides)."""
    from stepscope.formats import kinds

    return kinds.identify(path).pipeline(kinds.VIEW) == "tensorrt"


def load_trt_report(path: str) -> dict[str, Any]:
    """Every trtexec output of the engine ``path`` belongs to, as the report JSON."""
    from stepscope.formats.tensorrt.load import load_trt_run
    from stepscope.report.tensorrt import build_trt_report

    return build_trt_report(load_trt_run(path), top=TRT_TOP).to_json()
