"""Every real Kineto trace gives a report, in text and JSON, through the CLI and the API."""

from __future__ import annotations

import json
from typing import Any

import pytest
from tests.conftest import SHARED_TRACES, shared_trace

import stepscope
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.cli.main import main

TRACES = [
    "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz",
    "kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz",
    "kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    "kineto_resnet50/num_workers_4/worker0.1623213129365.pt.trace.json.gz",
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
    "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz",
    "hta/df_index_resolver/df_index_resolver.json.gz",
    "hta/mtia_trace_single_rank/mtia_rank_0.json.gz",
    "hta/nccl_parser_config/nccl_data.json.gz",
    "hta/negative_queue_length_values_check/rank0.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
    "hta/trace_diff/control/control.json.gz",
    "hta/trace_diff/test/test.json.gz",
    "hta/trace_filter/sampled_rank-0.json.gz",
    "hta/trace_filter/sampled_rank-1.json.gz",
    "hta/triton_example/triton_example.json.gz",
]
# Events read from each file (all phases), as stepscope counts them.
EVENTS = {
    "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz": 220,
    "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz": 30,
    "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz": 1408,
    "hta/cupti_profiler/benchmark_result_924719_1679055439_trace.json.gz": 4222,
    "hta/df_index_resolver/df_index_resolver.json.gz": 216092,
    "hta/mtia_trace_single_rank/mtia_rank_0.json.gz": 455739,
    "hta/triton_example/triton_example.json.gz": 71,
    "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz": 75718,
}
EXCLUDED = {"hta/memory_analysis/memory_timeline.raw.gz"}  # a memory snapshot, not a trace


def test_list_covers_every_trace() -> None:
    """The parametrised list is complete: a new shared trace must be added here."""
    for folder in ("kineto_resnet50", "hta"):
        root = SHARED_TRACES / folder
        if not root.exists():
            pytest.skip(f"real traces not available: {root}")
        found = {str(p.relative_to(SHARED_TRACES)) for p in root.rglob("*.gz")}
        assert found - EXCLUDED == {t for t in TRACES if t.startswith(folder + "/")}


def _sanity(data: dict[str, Any], rel: str) -> None:
    assert data["schema"] == "stepscope.report/1"
    assert data["source"]["format"] == "kineto"
    assert data["source"]["events"] > 0
    if rel in EVENTS:
        assert data["source"]["events"] == EVENTS[rel]
    assert data["steps"], "at least one step"
    for step in data["steps"]:
        assert step["duration_us"] > 0
        parts = step["breakdown_us"]
        assert set(parts) == set(CATEGORIES)
        assert all(v >= 0 for v in parts.values()), (step["name"], parts)
        # each value is rounded to the ns: the sum is the duration within 1 µs
        assert abs(sum(parts.values()) - step["duration_us"]) < 1.0
    bd = data["breakdown"]
    assert abs(sum(bd["avg_us"].values()) - bd["step_avg_us"]) < 1.0
    assert sum(bd["pct"].values()) == pytest.approx(100.0, abs=0.1)
    pcts = list(bd["pct"].values())
    for g in data["gpu"]:
        pcts += [g["utilization_pct"], g["sm_efficiency_pct"], g["achieved_occupancy_pct"],
                 g["tensor_core_pct"]]
    for t in data["temporal"]:
        pcts += [t["idle_pct"], t["compute_pct"], t["non_compute_pct"]]
        total = t["idle_pct"] + t["compute_pct"] + t["non_compute_pct"]
        assert total == pytest.approx(100, abs=0.02)
    for s in data["idle"]:
        pcts += [s["host_wait_pct"], s["kernel_wait_pct"], s["other_pct"]]
    for p in pcts:
        if p is not None:
            assert 0.0 <= p <= 100.0, (rel, p)
    for op in data["operators"]:
        assert op["calls"] > 0
        assert 0 <= op["host_self_us"] <= op["host_total_us"] + 1e-3
        assert 0 <= op["device_self_us"] <= op["device_total_us"] + 1e-3
    for k in data["kernels"]:
        assert k["calls"] > 0
        assert k["min_us"] <= k["mean_us"] <= k["max_us"]
    json.dumps(data)  # serialisable as is




@pytest.fixture(scope="module")
def reports() -> dict[str, dict[str, Any]]:
    return {}


def _api_json(cache: dict[str, dict[str, Any]], rel: str) -> dict[str, Any]:
    if rel not in cache:
        trace = stepscope.load(str(shared_trace(rel)), cache=False)
        cache[rel] = stepscope.build_report(trace).to_json()
    return cache[rel]


@pytest.mark.parametrize("rel", TRACES)
def test_report_api(rel: str, reports: dict[str, dict[str, Any]]) -> None:
    _sanity(_api_json(reports, rel), rel)


@pytest.mark.parametrize("rel", TRACES)
def test_report_cli_text(rel: str, reports: dict[str, dict[str, Any]],
                         capsys: pytest.CaptureFixture[str],
                         monkeypatch: pytest.MonkeyPatch) -> None:
    data = _api_json(reports, rel)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["report", str(shared_trace(rel))]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert "stepscope report" in out
    assert f"{data['source']['events']:,} events" in out
    assert "Step time" in out
    for g in data["gpu"]:  # the GPU table's utilization column (%), as in the JSON
        row = next(line for line in out.splitlines() if line.startswith(f"{g['device']} "))
        util = g["utilization_pct"]
        assert (f"{util:.2f}" if util is not None else "–") in row.split()


@pytest.mark.parametrize("rel", TRACES)
def test_report_cli_json(rel: str, reports: dict[str, dict[str, Any]],
                         capsys: pytest.CaptureFixture[str]) -> None:
    data = _api_json(reports, rel)
    code = main(["report", str(shared_trace(rel)), "--format", "json", "--top", "5"])
    out, _ = capsys.readouterr()
    assert code == 0
    cli = json.loads(out)
    _sanity(cli, rel)
    assert cli["breakdown"] == data["breakdown"]
    assert cli["steps"] == data["steps"]
    assert cli["operators"] == data["operators"][:5]
    assert cli["kernels"] == data["kernels"][:5]
