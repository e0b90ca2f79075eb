"""Issue 21 item 11: numbers that cannot be (totals above the span, ...)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from tests.builders import TraceBuilder
from tests.conftest import shared_trace

import stepscope
from stepscope.analysis.trace.operators import operator_stats
from stepscope.formats import load_trace
from stepscope.report.build import build_report
from stepscope.report.text.render import render_text

COPY = "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>"


def test_recursive_calls_count_once_in_totals(tmp_path: Path) -> None:
    """copy_ inside copy_ (a 100 us call holding a 90 us one): total 100 us, not 190."""
    b = TraceBuilder()
    with b.step(1, 0, 1_000):
        outer = b.op("aten::copy_", 10, 100)
        b.op("aten::empty", 11, 2)  # outer has two children: no same-name folding
        inner = b.op("aten::copy_", 15, 90)
        b.launch(inner, "cudaLaunchKernel", 20, 5, kernel=COPY, k_ts=30, k_dur=40)
        b.launch(outer, "cudaLaunchKernel", 106, 2, kernel=COPY, k_ts=120, k_dur=10)
        b.op("aten::copy_", 300, 50)  # a separate call counts in full
        by_shape = b.op("aten::copy_", 400, 60, input_dims=[[4], [4]])
        b.op("aten::empty", 401, 2)
        b.op("aten::copy_", 410, 20, input_dims=[[8], [8]])
        assert by_shape
    trace = b.load(tmp_path)
    row = next(r for r in operator_stats(trace) if r.name == "aten::copy_")
    assert row.calls == 5
    assert row.host_total_us == pytest.approx(100 + 50 + 60)
    assert row.device_total_us == pytest.approx(50)  # the inner call's 40 us counted once
    assert row.device_self_us == pytest.approx(50)
    # by shape: the nested call has another shape, so it is its own row's outermost call
    rows = {r.input_shape: r for r in operator_stats(trace, by_shape=True)
            if r.name == "aten::copy_"}
    assert rows["[[8],[8]]"].host_total_us == pytest.approx(20)
    assert rows["[[4],[4]]"].host_total_us == pytest.approx(60)


def test_real_recursive_conv1d_total_within_the_window() -> None:
    """ptrans-a100-gpu: aten::conv1d calls aten::conv1d; summed naively its total read
    2,702.7 ms in a 1,808.3 ms trace."""
    trace = load_trace(str(shared_trace("outside/ptrans-a100-gpu/gpu_working_chrome_trace.json")))
    rows = operator_stats(trace)
    conv = next(r for r in rows if r.name == "aten::conv1d")
    assert conv.host_total_us == pytest.approx(1_351_536.18, abs=0.01)
    assert conv.device_total_us == pytest.approx(12_849.843, abs=0.001)
    h = trace.host
    span_us = (max(int(h.end.max()), int(trace.device.end.max()))
               - min(int(h.ts.min()), int(trace.device.ts.min()))) / 1000
    assert max(r.host_total_us for r in rows) <= span_us


def _small(b: TraceBuilder) -> None:
    with b.step(1, 0, 1_000):
        for i in range(20):
            o = b.op("aten::mm", 10 + i * 40, 30)
            b.launch(o, "cudaLaunchKernel", 12 + i * 40, 5, kernel=COPY, k_ts=20 + i * 40,
                     k_dur=20)


def test_repaired_fields_are_not_partial(tmp_path: Path) -> None:
    """partial means events were lost; a field coerced to its type loses nothing."""
    b = TraceBuilder()
    _small(b)
    b.events[3]["name"] = 5  # a number where Kineto writes a string: coerced, event kept
    data = build_report(b.load(tmp_path)).to_json()
    src = data["source"]
    assert any(w.startswith("fields of the wrong type") for w in src["warnings"])
    assert src["skipped"] == {} and src["partial"] is False


def test_lost_events_are_partial(tmp_path: Path) -> None:
    b = TraceBuilder()
    _small(b)
    full = b.write(tmp_path, "full.json").read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(full[: int(len(full) * 0.7)])
    data = build_report(stepscope.load(str(cut), cache=False)).to_json()
    assert data["source"]["partial"] is True  # cut: the events after the cut are lost
    b.events.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7,
                     "ts": "soon", "dur": 1, "args": {}})
    data = build_report(b.load(tmp_path)).to_json()
    assert data["source"]["skipped"] and data["source"]["partial"] is True


def test_unknown_mfu_dtype_is_null_not_empty() -> None:
    """kineto-tbp-2020-12-bare-array records shapes without dtypes: no MFU dtype is known."""
    trace = load_trace(str(shared_trace(
        "outside/kineto-tbp-2020-12-bare-array/worker0.pt.trace.json.gz")))
    data = build_report(trace).to_json()
    assert data["efficiency"] is not None
    assert data["efficiency"]["mfu_dtype"] is None


MI300X_UNNAMED = {"id": 2, "name": "", "totalGlobalMem": 206_141_652_992, "computeMajor": 9,
                  "computeMinor": 4, "maxThreadsPerBlock": 1024,
                  "maxThreadsPerMultiprocessor": 2048, "numSms": 304, "warpSize": 64}


def test_one_device_identity_and_only_devices_that_ran(tmp_path: Path) -> None:
    """An unnamed MI300X (ROCm writes no name) is MI300X in the header, the GPU table and the
    efficiency line; a described GPU that ran nothing is not a device of the report."""
    b = TraceBuilder()
    idle = dict(MI300X_UNNAMED, id=3)
    b.device_properties = [MI300X_UNNAMED, idle]
    with b.step(1, 0, 1_000):
        for i in range(10):
            o = b.op("aten::mm", 10 + i * 90, 30, input_dims=[[64, 64], [64, 64]],
                     input_types=["c10::BFloat16", "c10::BFloat16"])
            b.launch(o, "hipLaunchKernel", 12 + i * 90, 5, kernel=COPY, k_ts=20 + i * 90,
                     k_dur=60, device=2)
    report = build_report(b.load(tmp_path))
    data = report.to_json()
    assert [d["id"] for d in data["devices"]] == [2]
    (dev,) = data["devices"]
    assert dev["name"] == "" and dev["label"] == "MI300X (by signature; no name recorded)"
    assert data["efficiency"]["devices"][0]["peak_match"] == "MI300X"
    out = io.StringIO()
    render_text(report, Console(file=out, width=100, color_system=None))
    text = out.getvalue()
    assert "GPU 2: MI300X (by signature; no name recorded)" in text
    assert "unnamed" not in text and "GPU 3" not in text
    assert "2 MI300X" in text  # the GPU table


def test_host_and_device_sides_covering_different_parts_are_said(tmp_path: Path) -> None:
    """Graph execution: host events end at 26 ms, the GPU works from 151 ms."""
    b = TraceBuilder()
    o = b.op("CUDAGraph.replay", 0, 26_000)
    rt = b.runtime("cudaGraphLaunch", 10, 20, owner=o)
    for i in range(100):
        b.device_op(rt, COPY, 151_000 + i * 2_000, 1_500)
    data = build_report(b.load(tmp_path)).to_json()
    (note,) = [n for n in data["notes"] if n.startswith("host events cover")]
    assert note == ("host events cover 0.0-26.0 ms and device work 151.0-350.5 ms of the "
                    "350.5 ms window: they do not overlap, and the 125.0 ms in between has "
                    "neither (counted as Other in the breakdown)")
    b2 = TraceBuilder()
    _small(b2)
    assert not [n for n in build_report(b2.load(tmp_path)).to_json()["notes"]
                if n.startswith("host events cover")]
