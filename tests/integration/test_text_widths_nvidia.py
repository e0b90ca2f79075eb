"""Nsight Systems and TensorRT terminal reports read well at 60, 80, 120 and 200 columns:
no line wider than the terminal, no unit or number alone on a line, numbers whole."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from functools import cache

import pytest
from rich.console import Console
from tests.conftest import shared_trace

from stepscope.analysis.tensorrt.diff import compare_engines
from stepscope.analysis.tensorrt.engine import analyse_tensorrt
from stepscope.formats import load_trace
from stepscope.formats.tensorrt.load import load_trt_run
from stepscope.report.build import Report, build_report
from stepscope.report.tensorrt import build_trt_report
from stepscope.report.text.render import render_text
from stepscope.report.text.tensorrt import render_trt_text
from stepscope.report.text.tensorrt_diff import render_engine_diff

NSYS = "nsys/nvidia-fuser/a049892_report1.sqlite"
TRT = "tensorrt/trex/examples/tensorflow/resnet/RTX-3090/{}/resnet.onnx.engine.profile.json"
WIDTHS = [60, 80, 120, 200]
ALONE = re.compile(r"\s*(ms|µs|ns|%|B|KiB|MiB|GiB|qps|[−+±]?[\d,.]+)\s*")


@cache
def _nsys_report() -> Report:
    return build_report(load_trace(str(shared_trace(NSYS)), use_cache=False))


def _render(draw: Callable[[Console], None], width: int) -> str:
    out = io.StringIO()
    draw(Console(file=out, width=width, color_system=None))
    return out.getvalue()


def _check(text: str, width: int) -> list[str]:
    lines = text.splitlines()
    # URLs stay whole on purpose (terminals keep them clickable)
    # and so do paths and names longer than half the line: never cut mid-token
    too_wide = [line for line in lines if len(line) > width
                and not re.fullmatch(r"\s*see https?://\S+", line)
                and len(max(line.split(), key=len)) <= width // 2]
    assert not too_wide, too_wide[:3]
    alone = [line for line in lines if ALONE.fullmatch(line)]
    assert not alone, alone[:3]
    assert "n/a" not in text
    return lines


def _row(lines: list[str], name: str) -> list[str]:
    """The cells of the first table row whose name starts with ``name``."""
    row = next(line for line in lines if line.startswith(name))
    return row[len(name):].split()


@pytest.mark.parametrize("width", WIDTHS)
def test_nsys_report_fits_every_width(width: int) -> None:
    text = _render(lambda c: render_text(_nsys_report(), c, view="all"), width)
    lines = _check(text, width)
    section = text.split("CUDA API summary (cuda_api_sum)")[1].split("\n\n")[0]
    assert "(ms)" in section  # the unit sits in the header, once per column
    cells = _row(section.splitlines(), "cudaLaunchKernel")
    assert cells[:2] == ["34.7", "24.89"]  # time (%), total (ms) are kept at every width
    if width >= 80:
        assert cells[2:] == ["9", "2.77", "2.07", "8.20"]
    assert any(line.startswith("[CUDA memcpy Host-to-Device]") for line in lines)
    sizes = text.split("(cuda_gpu_mem_size_sum)")[1]
    assert _row(sizes.splitlines(), "[CUDA memcpy Host-to-Device]")[0] == "375.75"  # MiB


@pytest.mark.parametrize("width", WIDTHS)
def test_tensorrt_report_fits_every_width(width: int) -> None:
    report = build_trt_report(load_trt_run(str(shared_trace(TRT.format("fp32")))), top=15)
    text = _render(lambda c: render_trt_text(report, c), width)
    lines = _check(text, width)
    assert _row(lines, "Latency (ms)")[:3] == ["12.10", "12.17", "12.20"]
    assert _row(lines, "Enqueue Time (µs)")[:3] == ["6.1", "6.8", "7.0"]
    layers = text.split("Layers (103;")[1].split("\n\n")[0]
    assert "(µs)" in layers and " µs" not in layers.split("\n", 3)[-1]
    assert "433.2" in layers  # the slowest layer, whole at every width
    assert "330.6 µs per inference" in text  # reformat layers, in prose


@pytest.mark.parametrize("width", WIDTHS)
def test_tensorrt_diff_fits_every_width(width: int) -> None:
    a, b = (analyse_tensorrt(load_trt_run(str(shared_trace(TRT.format(p)))))
            for p in ("fp32", "fp16"))
    text = _render(lambda c: render_engine_diff(compare_engines(a, b), c), width)
    lines = _check(text, width)
    assert _row(lines, "precision") == ["FP32", "FP16"]
    assert _row(lines, "throughput (qps)") == ["82.0", "248.2"]
    assert "B is 3.03x the speed of A" in text
    matched = text.split("Matched layers (77;")[1].split("\n\n")[0]
    assert "−260.1" in matched or width < 80  # the largest change, A → B in µs


@pytest.mark.parametrize("width", WIDTHS)
def test_ncu_section_fits_every_width(width: int) -> None:
    from pathlib import Path

    from stepscope.analysis.nsight.ncu_join import join_ncu
    from stepscope.formats.nsight.ncu import load_ncu
    from stepscope.report.json.ncu import ncu_json
    from stepscope.report.text.ncu import render_ncu

    path = Path(__file__).resolve().parent.parent / "data" / "ncu" / "superbench_cublaslt_ncu.log"
    data = ncu_json(join_ncu(load_ncu(str(path)), None))
    text = _render(lambda c: render_ncu(data, c, 5), width)
    lines = _check(text, width)
    header = "\n".join(lines[2:8])
    assert "SM" in header and "(%)" in header
    k = data["kernels"][0]
    row = next(line for line in lines if line.startswith("cutlass3x"))
    assert row.split()[1] == f"{k['sm_throughput_pct']:.0f}"  # SM (%), kept at every width
