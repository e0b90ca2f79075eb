"""Figures the terminal renderers derive themselves (unit conversions, ratios, counts,
roundings), pinned against values computed here by hand or read from the JSON."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from tests.builders import TraceBuilder
from tests.diff_builders import training_trace

from stepscope import build_report
from stepscope.analysis.diff import diff_runs
from stepscope.report.diff_json import diff_to_json
from stepscope.report.diff_load import summarise_trace
from stepscope.report.diff_text import render_diff_text
from stepscope.report.text_efficiency import render_efficiency


def _console(width: int = 160) -> Console:
    return Console(record=True, width=width, file=io.StringIO(), color_system=None)


def _cells(text: str, name: str) -> list[str]:
    """Cells of the first line starting with ``name``."""
    row = next(line for line in text.splitlines() if line.startswith(name))
    return row[len(name):].split()


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


def test_diff_text_figures_equal_the_diff_json(tmp_path: Path) -> None:
    base = training_trace(tmp_path, "base.json", seed=1)
    slow = training_trace(tmp_path, "slow.json", seed=2, mm_scale=1.3)
    diff = diff_runs(summarise_trace(str(base)), summarise_trace(str(slow)))
    j = diff_to_json(diff)
    c = _console()
    render_diff_text(diff, c)
    text = c.export_text()
    st = j["step_time"]
    assert (st["base_us"], st["new_us"], st["delta_us"], st["delta_pct"]) == (
        563.675, 685.725, 122.051, 21.65)
    kernel = next(x for x in j["categories"] if x["name"] == "kernel")
    assert (kernel["delta_us"], kernel["share_of_step_change_pct"]) == (122.051, 100.0)
    # all under 1 ms: µs with one decimal; the share of the change to whole percent
    assert ("step time 563.7 µs -> 685.7 µs (+122.1 µs, +21.7 %): regression; "
            "main change: Kernel +122.1 µs, 100 % of the change") in text
    p = st["significance"]["p_value"]
    assert p == 0.000155 and f"{p:.3g}" == "0.000155"
    assert "significant (p=0.000155 < 0.05, beyond the step-to-step spread)" in text
    # category row: base, new, change (µs), change (%) = delta / base, share (%)
    assert _cells(text, "Kernel ") == [
        f"{kernel['base_us']:.1f}", f"{kernel['new_us']:.1f}", f"+{kernel['delta_us']:.1f}",
        f"+{kernel['delta_pct']:.1f}", "100", "significant"]
    assert _cells(text, "Kernel ")[:4] == ["500.7", "622.7", "+122.1", "+24.4"]
    # sgemm alone grew by more than the step (101 % of the change: relu got faster)
    k = j["kernels"][0]
    assert (k["name"], k["delta_us"], k["share_of_step_change_pct"]) == (
        "sgemm_kernel", 123.207, 100.95)
    assert _cells(text, "sgemm_kernel ") == ["slower", "400.2", "523.4", "+123.2", "+30.8",
                                             "101"]
    util = next(g for g in j["gpu"] if g["metric"] == "utilization_pct")
    assert (util["base"], util["new"], util["delta"]) == (88.14, 90.24, 2.1)
    assert "GPU 0 utilization_pct: 88.14 % → 90.24 % (+2.10 points)" in text
