"""The terminal report of a real trace (torch-tb-profiler's ResNet-50 sample on a V100):
every figure the renderer converts, rounds or counts equals the JSON value it comes from,
converted here by hand (µs -> ms: / 1000; bytes -> GiB: / 2**30)."""

from __future__ import annotations

import io
from functools import cache
from typing import Any

from rich.console import Console
from tests.conftest import shared_trace

from stepscope.analysis.tensorrt.diff import compare_engines
from stepscope.analysis.tensorrt.engine import analyse_tensorrt
from stepscope.formats import load_trace
from stepscope.formats.tensorrt.load import load_trt_run
from stepscope.report.build import build_report
from stepscope.report.tensorrt import build_trt_report
from stepscope.report.text.render import render_text
from stepscope.report.text.tensorrt import render_trt_text
from stepscope.report.text.tensorrt_diff import render_engine_diff

TRACE = "kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz"


@cache
def _rendered() -> tuple[str, dict[str, Any]]:
    report = build_report(load_trace(str(shared_trace(TRACE)), use_cache=False))
    console = Console(record=True, width=200, file=io.StringIO(), color_system=None)
    render_text(report, console, view="all")
    return console.export_text(), report.to_json()


def _row(text: str, name: str, after: str = "") -> list[str]:
    """Cells of the first table row starting with ``name`` (after the line ``after``)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(after)) if after else 0
    row = next(line for line in lines[start:] if line.startswith(name))
    return row[len(name):].split()


def test_header_step_time_and_breakdown() -> None:
    text, d = _rendered()
    assert d["source"]["events"] == 75_718 and "75,718 events · nvidia" in text
    # six ProfilerSteps, 154,911.333 µs on average
    assert len(d["steps"]) == 6 and d["breakdown"]["step_avg_us"] == 154_911.333
    assert "Step time: 154.91 ms on average over 6 steps" in text
    bd = d["breakdown"]
    for label, key in (("Kernel", "kernel"), ("DataLoader", "dataloader"),
                       ("CPU exec", "cpu_exec"), ("Memset", "memset")):
        cells = _row(text, label + " ", after="Step time")
        assert cells[:2] == [f"{bd['avg_us'][key] / 1000:.2f}",
                             f"{bd['pct'][key]:.1f}"], label
    assert _row(text, "Kernel ", after="Step time")[:2] == ["98.53", "63.6"]  # 98,534.833 µs


def test_gpu_row() -> None:
    text, d = _rendered()
    g = d["gpu"][0]
    assert _row(text, "0 Tesla V100-DGXS-32GB") == [
        f"{g[k]:.2f}" for k in ("utilization_pct", "sm_efficiency_pct",
                                "achieved_occupancy_pct", "tensor_core_pct")]


def test_top_kernel_row_and_launch_configuration() -> None:
    text, d = _rendered()
    k = d["kernels"][0]
    name = "cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>"
    assert k["name"].startswith("void " + name)
    # total in ms (80,683 µs), mean in µs (the column's largest mean is under 1 ms)
    assert max(x["mean_us"] for x in d["kernels"]) < 1000
    assert _row(text, name, after="Top kernels") == [
        "162", "80.68", "498.0", "42.3", "30", "no"]
    assert (k["total_us"], k["mean_us"], k["blocks_per_sm"]) == (80_683.0, 498.043, 42.28)
    # launch table: min/mean/max in ms, as the largest max (1,016 µs) is over 1 ms
    assert (k["min_us"], k["max_us"]) == (324.0, 1016.0)
    assert _row(text, name, after="Kernel launches")[:4] == ["162", "0.32", "0.50", "1.02"]


def test_temporal_idle_and_launch_lines() -> None:
    text, d = _rendered()
    t = d["temporal"][0]
    assert t["span_us"] == 876_066.0
    assert (f"GPU time (rank 0, 876.07 ms active span): compute {t['compute_pct']:.1f} %, "
            f"non-compute {t['non_compute_pct']:.1f} %, idle {t['idle_pct']:.1f} %") in text
    assert "compute 67.5 %, non-compute 1.2 %, idle 31.3 %" in text
    assert "idle on stream 7 (device 0): host wait 96 %, kernel wait 4 %, other 0 %" in text
    la = d["launches"]
    assert (la["launch_delay_mean_us"], la["launch_delay_p95_us"]) == (11_155.597, 28_985.5)
    # issue 21: the fixed thresholds are named, and 7,264 of 9,096 are not called outliers
    assert ("Launches: 9,096 · short kernels 5,763 · launch delay mean 11.16 ms, p95 28.99 ms"
            " · launch calls over 50 µs: 6 · delayed over 100 µs: 7,264 of 9,096 (80 %, most "
            "launches: work is queued ahead of the GPU)") in " ".join(text.split())


def test_efficiency_lines() -> None:
    text, d = _rendered()
    e = d["efficiency"]
    assert e["mfu_dtype"] == "fp32" and e["steps"][0]["peak_tflops"] == 15.7
    assert "V100 SXM2 (name), fp32 peak 15.7 TFLOP/s, 900 GB/s" in text
    assert (e["mfu_pct"], e["hfu_pct"], e["modelled_time_pct"]) == (21.79, 21.79, 78.12)
    assert round(e["total_gflop"]) == 3180  # 3,179.77 GFLOP to 4 significant digits
    assert "MFU 21.8 % · HFU 21.8 % (fp32) · 3,180 GFLOP · 78.1 % of device time" in text


def test_memory_peaks() -> None:
    text, d = _rendered()
    cpu, gpu = d["memory"]["devices"]
    assert gpu["peak_allocated_bytes"] == 2_791_636_480 and gpu["peak_us"] == 105_994.0
    assert f"{gpu['peak_allocated_bytes'] / 2**30:.2f}" == "2.60"
    assert "GPU0: peak increase 2.60 GiB at 105.99 ms, step 16, in aten::empty" in text
    assert f"{cpu['peak_allocated_bytes'] / 2**20:.2f}" == "55.13"
    assert "CPU: peak increase 55.13 MiB at 203.50 ms, step 17, in aten::empty" in text


def test_finding_saving() -> None:
    text, d = _rendered()
    s = d["findings"][0]["estimated_saving"]
    # replayed with the DataLoader wait removed (docs/whatif.md)
    assert (s["us_per_step"], s["pct_of_step"], s["method"]) == (35_193.166, 22.72, "replay")
    assert s["predicted_step_us"] == 119_717.667
    assert "saves 35.19 ms per step (22.7 % of the step; replayed step 119.72 ms) · " \
        "input-pipeline" in text


TRT = "tensorrt/trex/examples/tensorflow/resnet/RTX-3090/{}/resnet.onnx.engine.profile.json"


def _trt_text(draw: Any) -> str:
    console = Console(record=True, width=200, file=io.StringIO(), color_system=None)
    draw(console)
    return console.export_text()


def test_tensorrt_layer_counts_sums_and_shares() -> None:
    report = build_trt_report(load_trt_run(str(shared_trace(TRT.format("fp32")))), top=5)
    t = report.to_json()["tensorrt"]
    text = _trt_text(lambda c: render_trt_text(report, c))
    assert len(t["layers"]) == 103 and t["layer_total_ms"] == 12.399744
    assert ("Layers (103; top 5 by time, per inference, 1 profiled iterations; sum 12.40 ms)"
            in text)
    assert (t["timing_cv_pct"], t["iterations_timed"]) == (1.339, 263)
    assert "GPU compute coefficient of variance: 1.34 % over 263 timed iterations" in text
    rf = t["reformats"]
    assert (rf["layers"], rf["average_ms"], rf["share_pct"]) == (43, 0.330624, 2.67)
    assert "Reformat layers: 43 · 330.6 µs per inference (2.7 % of layer time)" in text
    assert t["precision_mix"] == [
        {"key": "FP32", "average_ms": 12.399744, "share_pct": 100.0, "layers": 103}]
    assert "Precision mix (by layer time): FP32 100.0 % (103 layers)" in text
    shares = ", ".join(f"{s['key']} {s['share_pct']:.1f} %" for s in t["by_type"][:8])
    assert shares.startswith("CaskConvolution 93.0 %, Reformat 2.7 %, Padding 2.0 %")
    assert "By layer type: " + shares in " ".join(text.split())
    # the slowest layer's avg in µs (0.433152 ms), its share of the layer sum
    top = max(t["layers"], key=lambda r: r["average_ms"])
    assert top["average_ms"] == 0.433152
    assert f"{top['share_pct']:.1f}" == f"{100 * 0.433152 / 12.399744:.1f}" == "3.5"
    assert _row(text, top["name"])[:3] == [str(top["index"]), "433.2", "3.5"]


def test_tensorrt_diff_overview_and_only_in_rows() -> None:
    a, b = (analyse_tensorrt(load_trt_run(str(shared_trace(TRT.format(p)))))
            for p in ("fp32", "fp16"))
    cmp = compare_engines(a, b)
    j = cmp.to_json()
    text = _trt_text(lambda c: render_engine_diff(cmp, c))
    assert (j["a"]["inference_ms"], j["b"]["inference_ms"]) == (12.1952, 4.02732)
    assert (j["a"]["layer_total_ms"], j["b"]["layer_total_ms"]) == (12.399744, 4.272736)
    assert _row(text, "per inference, GPU compute (ms)") == ["12.20", "4.03"]
    assert _row(text, "sum of per-layer times (ms)") == ["12.40", "4.27"]
    # speedup = A / B per inference, from the JSON's one figure
    assert j["speedup"] == 3.028118 and f"{12.1952 / 4.02732:.2f}" == "3.03"
    assert "B is 3.03x the speed of A per inference" in text
    assert (len(j["only_a"]), len(j["only_b"])) == (26, 9)
    assert j["only_a"][0]["a_ms"] == 0.06656
    flat = " ".join(text.split())
    assert "Only in A (26): " in flat and "MaxPool 66.6 µs;" in flat
    assert "Only in B (9): " in flat
    mix = {s["key"]: (s["a_pct"], s["b_pct"]) for s in j["precision_mix"]}
    assert mix == {"FP32": (100.0, 3.21), "FP16": (0.0, 96.79)}
    assert ("Precision mix (share of layer time, A → B): FP32 100.0 % → 3.2 %, "
            "FP16 0.0 % → 96.8 %") in flat
    top = j["matched_layers"][0]
    assert (top["a_ms"], top["b_ms"], top["delta_ms"]) == (0.34304, 0.082944, -0.260096)
    assert _row(text, top["name"])[:3] == ["343.0", "82.9", "−260.1"]


def test_memory_line_wraps_under_its_indent() -> None:
    """'reserved up' / 'to 0 B' at column 0 was the issue: continuation lines keep the
    line's indent plus two, and no line ends in a space."""
    report = build_report(load_trace(str(shared_trace(
        "hta/df_index_resolver/df_index_resolver.json.gz")), use_cache=False))
    console = Console(record=True, width=80, file=io.StringIO(), color_system=None)
    render_text(report, console, view="all")
    lines = console.export_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("Memory (profile_memory"))
    assert lines[at + 1:at + 3] == [
        "  CPU: peak allocated 8 B at 53.08 ms, step 2, in CompiledFunction; reserved",
        "    up to 0 B"]
    assert not [line for line in lines if line != line.rstrip()]
