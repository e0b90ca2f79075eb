"""Figures the terminal renderers derive themselves (unit conversions, ratios, counts,
roundings), pinned against values computed here by hand or read from the JSON."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from rich.console import Console
from tests.builders import TraceBuilder
from tests.diff_builders import training_trace
from tests.distributed_builders import write_run

from stepscope import build_report
from stepscope.analysis.compare.diff import diff_runs
from stepscope.report.diff_load import summarise_trace
from stepscope.report.json.diff import diff_to_json
from stepscope.report.run import build_run_report, find_run
from stepscope.report.text.diff import render_diff_text
from stepscope.report.text.distributed import render_run_text
from stepscope.report.text.efficiency import render_efficiency


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
    assert ("step time 563.7 µs → 685.7 µs (+122.1 µs, +21.7 %): regression; "
            "main change: Kernel +122.1 µs, 100 % of the change") in text
    p = st["significance"]["p_value"]
    assert p == 0.000155 and f"{p:.3g}" == "0.000155"
    assert "significant (p=0.000155 < 0.05, beyond the step-to-step spread)" in text
    # category row: base, new, change (µs), change (%) = delta / base, share (%)
    assert _cells(text, "Kernel ") == [
        f"{kernel['base_us']:.1f}", f"{kernel['new_us']:.1f}", f"+{kernel['delta_us']:.1f}",
        f"+{kernel['delta_pct']:.1f}", "100", "significant",
        f"{kernel['significance']['p_value']:.3g}"]  # issue 21: the test's p-value shown
    assert _cells(text, "Kernel ")[:4] == ["500.7", "622.7", "+122.1", "+24.4"]
    # sgemm alone grew by more than the step (101 % of the change: relu got faster)
    k = j["kernels"][0]
    assert (k["name"], k["delta_us"], k["share_of_step_change_pct"]) == (
        "sgemm_kernel", 123.207, 100.95)
    assert _cells(text, "sgemm_kernel ") == ["slower", "400.2", "523.4", "+123.2", "+30.8",
                                             "101"]
    util = next(g for g in j["gpu"] if g["metric"] == "utilization_pct")
    assert (util["base"], util["new"], util["delta"]) == (88.14, 90.24, 2.1)
    assert "GPU 0 utilization: 88.14 % → 90.24 % (+2.10 points)" in text


def test_run_text_figures_by_hand(tmp_path: Path) -> None:
    # two ranks, two 4.5 ms steps; rank 0 computes 1 ms, rank 1 3 ms, then a 4 MB all-reduce
    # whose transfer takes 1 ms once rank 1 arrives
    write_run(tmp_path, [1000, 3000], steps=2)
    report = build_run_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)
    c = _console()
    render_run_text(report, c)
    text = c.export_text()
    d = report.to_json()["distributed"]
    # rank 0 per step: compute 1 ms, in the all-reduce 3 ms (2 ms waiting for rank 1, 1 ms
    # transfer), 0.5 ms other: 2 steps -> 2, 0, 6, 1, 4, 2 (ms)
    r0 = d["ranks"][0]
    assert [r0[k] for k in ("computation_us", "overlap_us", "communication_us", "other_us",
                            "sync_us", "transfer_us")] == [2000, 0, 6000, 1000, 4000, 2000]
    per_rank = text.split("Per rank")[1].split("\n\n")[0]
    assert _cells(per_rank, "0 ") == [
        "2.00", "0.0", "6.00", "1.00", "4.00", "2.00", "0.0"]
    # rank 1 made rank 0 wait 2 ms in each step: 4 ms, 100 % of the waiting; last at 2 of 2
    # calls; its 6 ms of compute are 2 ms over the ranks' mean (4 ms)
    s = d["stragglers"][0]
    assert (s["rank"], s["wait_caused_us"], s["share_pct"], s["last_arrivals"],
            s["matched_calls"], s["computation_excess_us"]) == (1, 4000, 100.0, 2, 2, 2000)
    stragglers = text.split("Stragglers")[1].split("\n\n")[0]
    assert _cells(stragglers, "1 ") == ["4.00", "100.0", "2/2", "2.00"]
    steps = text.split("who made the others wait")[1].split("\n\n")[0]
    assert _cells(steps, "1 ") == ["1", "2.00"] and _cells(steps, "2 ") == ["1", "2.00"]
    # 2 calls of 4,000,000 B; 8 ms in all-reduces over both ranks, 2 ms of it transfer;
    # algbw = 4e6 B / 1 ms = 4 GB/s, busbw = algbw * 2(n-1)/n = 4 GB/s for n = 2
    coll = d["collectives"][0]
    assert (coll["calls"], coll["bytes_per_call"], coll["time_us"], coll["transfer_us"],
            coll["algbw_gbps"], coll["busbw_gbps"]) == (2, 4e6, 8000, 2000, 4.0, 4.0)
    collectives = text.split("Collectives (")[1]  # the critical path lists calls as well
    assert _cells(collectives, "allreduce ") == ["0", "2", "4,000,000", "8.00", "2.00", "4.000",
                                                 "4.000"]


def test_critical_path_and_whatif_text_equal_the_json() -> None:
    """The text sections of the replay (all fixes together) and the critical path print the
    JSON's figures (ResNet-50, kineto_resnet50/num_workers_0, one V100 run)."""
    import pytest
    from tests.conftest import shared_trace

    import stepscope
    from stepscope.report.text.render import render_text
    from stepscope.units import format_us

    path = shared_trace("kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    report = build_report(stepscope.load(str(path)))
    data = report.to_json()
    console = _console(200)
    render_text(report, console)
    text = console.export_text()
    cp, wi = data["critical_path"], data["whatif"]
    assert cp["windows"] == 6 and cp["length_us"] == pytest.approx(96_714, abs=1)
    assert (f"Critical path (longest dependency chain, HTA's definition; mean of 6 windows): "
            f"{format_us(cp['length_us'])} of {format_us(cp['window_us'])}") in text
    assert "bound by: CPU 70.3 %, data loading 29.7 %" in text
    assert wi["before"]["step_us"] == pytest.approx(177_592, abs=1)
    assert wi["after"]["step_us"] == pytest.approx(101_632, abs=1)
    assert (f"All modelled fixes together (replayed step, docs/whatif.md): "
            f"{format_us(wi['before']['step_us'])} → {format_us(wi['after']['step_us'])} per "
            f"step ({wi['saving_pct']:.1f} % saved)") in text
    row = _cells(text, "  data loading")
    assert row == [format_us(wi["before"]["by_category_us"]["data_loading"]).split()[0], "ms",
                   "→", "0.0", "µs"]


def test_counts_take_their_nouns_number() -> None:
    from stepscope.units import count
    assert [count(1, "call"), count(3, "call"), count(1.0, "call"), count(2.0, "call")] == \
        ["1 call", "3 calls", "1 call", "2 calls"]
    assert count(1.5, "batch fetch", "batch fetches") == "1.5 batch fetches"
    assert count(758.3, "call") == "758 calls"  # a per-step mean of 100 or more: whole
    assert count(0.3, "kernel") == "0.3 kernels"
    assert count(1234, "event") == "1,234 events"
