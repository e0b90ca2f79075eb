"""Figures the terminal renderers derive themselves (unit conversions, ratios, counts,
roundings), pinned against values computed here by hand or read from the JSON."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from tests.builders import TraceBuilder

from stepscope import build_report
from stepscope.report.text_efficiency import render_efficiency


def _console(width: int = 160) -> Console:
    return Console(record=True, width=width, file=io.StringIO(), color_system=None)


def _bf16_on_v100(tmp_path: Path) -> dict[str, Any]:
    """Three 1 ms steps of one bf16 1024³ matmul (500 µs kernel) on a V100: no bf16 peak."""
    b = TraceBuilder()
    b.device_properties[0].update(name="Tesla V100-SXM2-16GB", totalGlobalMem=16 * 2**30,
                                  computeMajor=7, numSms=80)
    for i in range(3):
        t0 = i * 1000.0
        with b.step(i + 1, t0, 1000):
            mm = b.op("aten::mm", t0 + 1, 5, input_dims=[[1024, 1024], [1024, 1024]],
                      input_types=["c10::BFloat16", "c10::BFloat16"])
            b.launch(mm, "cudaLaunchKernel", t0 + 2, 2, kernel="volta_sgemm_128x64_nn",
                     k_ts=t0 + 10, k_dur=500)
    return build_report(b.load(tmp_path)).to_json()


def test_efficiency_peak_is_the_one_mfu_divides_by(tmp_path: Path) -> None:
    data = _bf16_on_v100(tmp_path)
    e = data["efficiency"]
    # The V100 has no bf16 peak: MFU has none to divide by, and the line shows none either
    # (it used to show the fp32 peak, 15.7, as the "bf16 peak" beside "MFU –").
    assert e["mfu_dtype"] == "bf16" and e["mfu_pct"] is None
    assert {s["peak_tflops"] for s in e["steps"]} == {None}
    c = _console()
    render_efficiency(c, data)
    text = c.export_text()
    assert "V100 SXM2 (name), bf16 peak –, 900 GB/s" in text
    assert "15.7" not in text
    # 3 × 2·1024³ FLOP = 6.442 GFLOP, printed with 4 significant digits
    assert "MFU – · HFU – (bf16) · 6.442 GFLOP · 100.0 % of device time has a work model" in text
