"""``stepscope diff`` on real TensorRT profiles: identical engines show no difference, an
FP32 and an FP16 build of one model show only what really changed."""

from __future__ import annotations

import io

import pytest
from rich.console import Console
from tests.conftest import shared_trace

from stepscope.analysis.tensorrt.diff import EngineComparison, compare_engines
from stepscope.analysis.tensorrt.engine import analyse_tensorrt
from stepscope.formats.tensorrt.load import load_trt_run
from stepscope.report.text.tensorrt_diff import render_engine_diff

RESNET = "tensorrt/trex/examples/tensorflow/resnet/RTX-3090/{}/resnet.onnx.engine.profile.json"


def _compare(a: str, b: str) -> EngineComparison:
    return compare_engines(
        analyse_tensorrt(load_trt_run(str(shared_trace(RESNET.format(a))))),
        analyse_tensorrt(load_trt_run(str(shared_trace(RESNET.format(b))))),
    )


def _text(c: EngineComparison) -> str:
    out = io.StringIO()
    render_engine_diff(c, Console(file=out, width=120, color_system=None))
    return out.getvalue()


def test_identical_engines_show_no_difference() -> None:
    c = _compare("fp32", "fp32")
    assert c.a_layers == c.b_layers == 103
    assert len(c.matched) == 103 and not c.only_a and not c.only_b
    assert all(d.delta_ms == 0.0 for d in c.matched)
    assert all(d.a_precision == d.b_precision for d in c.matched)
    assert c.fusions == ()  # reformats quoting the layer they feed once faked 76 fusions
    text = _text(c)
    assert "Fusion differences" not in text and "fuses" not in text
    assert "Matched layers (103; no layer's time changed; slowest first)" in text
    assert c.matched[0].a_ms == pytest.approx(0.4332, abs=1e-4)  # Conv__435 + conv1_relu


def test_fp32_vs_fp16_shows_only_the_real_differences() -> None:
    c = _compare("fp32", "fp16")
    assert (c.a_layers, c.b_layers) == (103, 86)
    assert (c.a_precision, c.b_precision) == ("FP32", "FP16")
    assert len(c.matched) == 77
    # Layers only in one engine are the reformats each build inserted; the network's own
    # layers (and so its fused groups) are the same in both builds.
    assert (len(c.only_a), len(c.only_b)) == (26, 9)
    assert all(d.name.startswith("Reformatting CopyNode") for d in c.only_a + c.only_b)
    assert c.fusions == ()
    assert sum(d.a_precision != d.b_precision for d in c.matched) == 75
    assert c.speedup is not None and c.speedup > 1.0
    text = _text(c)
    assert "Fusion differences" not in text


@pytest.mark.parametrize("side", ["a", "b"])
def test_reformat_never_counts_as_a_fused_layer(side: str) -> None:
    c = _compare("fp16", "fp32") if side == "a" else _compare("fp32", "fp16")
    assert c.fusions == ()
