"""The report JSON contract: every documented key, types, values, serialisable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.report.build import build_report
from stepscope.report.json.render import render_json


def _data(tmp_path: Path, top: int = 20) -> dict[str, Any]:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    lin = b.op("aten::linear", 10, 50)
    mm = b.op("aten::mm", 15, 30)
    b.launch(mm, "cudaLaunchKernel", 20, 5, kernel="sgemm", k_ts=30, k_dur=40,
             **{"blocks per SM": 0.5, "est. achieved occupancy %": 50})
    b.launch(lin, "cudaLaunchKernel", 50, 5, kernel="add_kernel", k_ts=75, k_dur=10)
    trace = b.load(tmp_path)
    return build_report(trace, top=top).to_json()


def test_contract_keys(tmp_path: Path) -> None:
    d = _data(tmp_path)
    for key in ("schema", "source", "devices", "steps", "breakdown", "gpu", "operators",
                "kernels", "temporal", "idle", "launches", "findings"):
        assert key in d, key
    assert d["schema"] == "stepscope.report/1"
    assert {"path", "format", "events"} <= set(d["source"])
    assert d["source"]["format"] == "kineto"
    assert d["source"]["events"] == 7  # step, 2 ops, 2 runtime calls, 2 kernels
    assert [dev["name"] for dev in d["devices"]] == ["NVIDIA H100 80GB HBM3"]
    (step,) = d["steps"]
    assert {"name", "start_us", "duration_us", "breakdown_us"} <= set(step)
    assert (step["name"], step["start_us"], step["duration_us"]) == ("1", 0.0, 100.0)
    assert set(step["breakdown_us"]) == set(CATEGORIES)
    assert step["breakdown_us"]["kernel"] == 50.0
    assert sum(step["breakdown_us"].values()) == pytest.approx(100.0)
    bd = d["breakdown"]
    assert set(bd) >= {"step_avg_us", "avg_us", "pct"}
    assert set(bd["avg_us"]) == set(CATEGORIES) == set(bd["pct"])
    assert bd["step_avg_us"] == 100.0
    assert bd["pct"]["kernel"] == 50.0
    (g,) = d["gpu"]
    assert {"device", "utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct",
            "tensor_core_pct"} <= set(g)
    assert (g["device"], g["utilization_pct"], g["sm_efficiency_pct"]) == (0, 50.0, 20.0)
    assert g["achieved_occupancy_pct"] == 50.0  # only sgemm has the estimate
    op_keys = {"name", "calls", "host_self_us", "host_total_us", "device_self_us",
               "device_total_us"}
    assert all(op_keys <= set(o) for o in d["operators"])
    ops = {o["name"]: o for o in d["operators"]}
    assert ops["aten::linear"]["device_total_us"] == 50.0
    assert ops["aten::linear"]["host_self_us"] == 15.0  # 50 - 30 - 5
    k_keys = {"name", "calls", "total_us", "mean_us", "min_us", "max_us", "blocks_per_sm",
              "achieved_occupancy_pct", "tensor_cores"}
    assert all(k_keys <= set(k) for k in d["kernels"])
    assert [k["name"] for k in d["kernels"]] == ["sgemm", "add_kernel"]
    (t,) = d["temporal"]
    assert {"rank", "idle_pct", "compute_pct", "non_compute_pct"} <= set(t)
    assert (t["idle_pct"], t["compute_pct"], t["non_compute_pct"]) == (
        pytest.approx(100 * 5 / 55, abs=0.01), pytest.approx(100 * 50 / 55, abs=0.01), 0.0)
    assert isinstance(d["idle"], list) and d["idle"]
    assert d["launches"]["launches"] == 2
    assert isinstance(d["findings"], list)
    json.loads(json.dumps(d))


def test_top_limits_tables(tmp_path: Path) -> None:
    d = _data(tmp_path, top=1)
    assert len(d["operators"]) == 1
    assert len(d["kernels"]) == 1


def _non_plain(x: Any, path: str = "") -> list[str]:
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in _non_plain(v, f"{path}.{k}")]
    if isinstance(x, list):
        return [p for i, v in enumerate(x) for p in _non_plain(v, f"{path}[{i}]")]
    return [] if type(x) in (int, float, str, bool, type(None)) else [f"{path}: {type(x)}"]


def test_json_values_are_plain_python_and_render(tmp_path: Path) -> None:
    b = TraceBuilder()
    op = b.op("aten::mm", 0, 10)
    b.launch(op, "cudaLaunchKernel", 1, 1, kernel="k", k_ts=5, k_dur=4)
    report = build_report(b.load(tmp_path))
    assert _non_plain(report.to_json()) == []
    assert msgspec.json.decode(render_json(report))["schema"] == "stepscope.report/1"
