"""Pins the JSON figures no other test pins, on a trace small enough to compute by hand.

Two steps, each an aten::mm launching one "gemm" kernel; a third, empty step at the end.
Times in µs:
  step 1 [0, 100):   mm [10, 30) launches at [12, 15) -> kernel [20, 60)
  step 2 [100, 200): mm [110, 130) launches at [112, 115) -> kernel [150, 170)
  step 3 [200, 210): no device work -> dropped as an incomplete trailing step
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.builders import TraceBuilder

from stepscope import build_report

CONFIG: dict[str, Any] = {
    "grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32, "shared memory": 1024,
}


@pytest.fixture
def report(tmp_path: Path) -> dict[str, Any]:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 10, 20, input_dims=[[2, 3], [3, 4]])
        b.launch(op, "cudaLaunchKernel", 12, 3, kernel="gemm", k_ts=20, k_dur=40, **CONFIG)
    with b.step(2, 100, 100):
        op = b.op("aten::mm", 110, 20, input_dims=[[8, 3], [3, 4]])
        b.launch(op, "cudaLaunchKernel", 112, 3, kernel="gemm", k_ts=150, k_dur=20, **CONFIG)
    with b.step(3, 200, 10):
        pass
    data: dict[str, Any] = build_report(b.load(tmp_path)).to_json()
    return data


def test_devices(report: dict[str, Any]) -> None:
    assert report["devices"] == [{
        "id": 0, "name": "NVIDIA H100 80GB HBM3", "label": "NVIDIA H100 80GB HBM3",
        "total_memory_bytes": 85_000_000_000,
        "compute_capability": "9.0", "num_sms": 132,
    }]


def test_steps_and_dropped_tail(report: dict[str, Any]) -> None:
    assert [(s["name"], s["start_us"], s["duration_us"]) for s in report["steps"]] == [
        ("1", 0.0, 100.0), ("2", 100.0, 100.0)]
    assert report["steps_dropped"] == ["3"]
    assert report["profiler_steps"] is True


def test_launches(report: dict[str, Any]) -> None:
    # delays: 20 - 15 = 5 µs and 150 - 115 = 35 µs
    assert report["launches"] == {
        "rank": 0, "launches": 2, "short_kernels": 0, "runtime_outliers": 0,
        "launch_delay_outliers": 0, "launch_delay_mean_us": 20.0, "launch_delay_p50_us": 20.0,
        "launch_delay_p95_us": 33.5, "launch_delay_max_us": 35.0,
        "cpu_total_us": 6.0, "gpu_total_us": 60.0,
    }


def test_temporal_and_idle(report: dict[str, Any]) -> None:
    # GPU active from 20 to 170 µs, busy 60 µs; the one gap (60 -> 150) is host wait
    assert report["temporal"] == [{
        "rank": 0, "span_us": 150.0, "idle_pct": 60.0, "compute_pct": 40.0,
        "non_compute_pct": 0.0,
    }]
    assert report["idle"] == [{
        "rank": 0, "device": 0, "stream": 7, "span_us": 150.0, "idle_us": 90.0,
        "host_wait_us": 90.0, "kernel_wait_us": 0.0, "other_us": 0.0,
        "host_wait_pct": 100.0, "kernel_wait_pct": 0.0, "other_pct": 0.0,
    }]


def test_kernel_launch_configuration(report: dict[str, Any]) -> None:
    (k,) = report["kernels"]
    assert (k["name"], k["calls"], k["total_us"], k["mean_us"], k["min_us"], k["max_us"]) == (
        "gemm", 2, 60.0, 30.0, 20.0, 40.0)
    assert (k["grid"], k["block"], k["registers_per_thread"], k["shared_memory_bytes"]) == (
        [4, 1, 1], [128, 1, 1], 32, 1024)


def test_operators_by_shape(report: dict[str, Any]) -> None:
    rows = [(o["name"], o["input_shape"], o["calls"], o["device_self_us"], o["host_self_us"])
            for o in report["operators_by_shape"]]
    assert rows == [("aten::mm", "[[2,3],[3,4]]", 1, 40.0, 17.0),
                    ("aten::mm", "[[8,3],[3,4]]", 1, 20.0, 17.0)]


def test_kernels_by_launch_configuration(tmp_path: Path) -> None:
    """A kernel launched with two configurations: the row by name says 2 configurations (and
    names the most frequent), the rows by configuration split its calls and times."""
    b = TraceBuilder()
    other = {**CONFIG, "grid": [640, 1, 1], "blocks per SM": 4.0}
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 10, 20, input_dims=[[2, 3], [3, 4]])
        b.launch(op, "cudaLaunchKernel", 12, 3, kernel="gemm", k_ts=20, k_dur=40, **CONFIG)
        b.launch(op, "cudaLaunchKernel", 16, 3, kernel="gemm", k_ts=62, k_dur=10, **CONFIG)
    with b.step(2, 100, 100):
        op = b.op("aten::mm", 110, 20, input_dims=[[8, 3], [3, 4]])
        b.launch(op, "cudaLaunchKernel", 112, 3, kernel="gemm", k_ts=150, k_dur=20, **other)
    data = build_report(b.load(tmp_path)).to_json()
    (k,) = data["kernels"]
    assert (k["calls"], k["configs"], k["grid"]) == (3, 2, [4, 1, 1])
    rows = [(r["name"], r["grid"], r["calls"], r["total_us"], r["min_us"], r["max_us"],
             r["configs"], r["blocks_per_sm"]) for r in data["kernels_by_config"]]
    assert rows == [("gemm", [4, 1, 1], 2, 50.0, 10.0, 40.0, 1, 0.0),
                    ("gemm", [640, 1, 1], 1, 20.0, 20.0, 20.0, 1, 4.0)]
