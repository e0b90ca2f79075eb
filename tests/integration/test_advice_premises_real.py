"""Issue 21 on real traces: premises (capture-only windows, launch queues), one window per
finding (``--step``) and severity by size."""

from __future__ import annotations

import pytest
from tests.conftest import shared_trace

import stepscope
from stepscope.advice import NEEDS_EXECUTED_WORK, Finding, advise
from stepscope.analysis.suite import Analyses, run_analyses
from stepscope.report.build import build_report

VLLM = ("outside/tracelens-vllm-mi300-graph-capture/"
        "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz")


def _analyses(rel: str, step: int | None = None) -> Analyses:
    return run_analyses(stepscope.load(str(shared_trace(rel)), cache=False), step=step)


def _ids(fs: list[Finding]) -> dict[str, str]:
    return {f.id: f.severity for f in fs}


def test_vllm_graph_capture_raises_no_finding_that_needs_executed_work() -> None:
    # before: cpu-ops-in-gpu-job (high, 47.87 ms "with the GPU idle") and dominant-module
    # (high) on a window whose launches were captured, not run
    a = _analyses(VLLM)
    assert a.graphs is not None and a.graphs.capture_only
    fs = _ids(advise(a))
    assert not set(fs) & NEEDS_EXECUTED_WORK
    notes = build_report(stepscope.load(str(shared_trace(VLLM)), cache=False)).to_json()["notes"]
    assert any("graph capture" in n and "low-mfu" in n for n in notes)


@pytest.mark.parametrize("rel", [
    "outside/param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json",
])
def test_executed_windows_keep_their_gpu_findings(rel: str) -> None:
    a = _analyses(rel)
    assert a.graphs is None or not a.graphs.capture_only
    # the rules the capture premise silences still run on executed work
    assert {"launch-bound", "low-mfu"} <= set(_ids(advise(a))) & NEEDS_EXECUTED_WORK


NW0 = "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NW4 = "kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz"
DLRM0 = "outside/param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json"


@pytest.mark.parametrize("rel", [NW0, NW4])
def test_launch_bound_silent_on_v100_runs_with_a_deep_launch_queue(rel: str) -> None:
    # before: launch-bound (medium on num_workers_0, high on num_workers_4) although the
    # median launch->start delay is 2.6-9.5 ms: the GPU had milliseconds of work queued
    a = _analyses(rel)
    assert a.launches is not None and a.launches.delay_p50_ns > 2_000_000
    assert "launch-bound" not in _ids(advise(a))


def test_launch_bound_fires_where_kernels_start_at_launch() -> None:
    a = _analyses(DLRM0)
    (f,) = [f for f in advise(a) if f.id == "launch-bound"]
    assert "median launch delay in the steps 2.0 µs" in f.evidence[3]
    assert "158 gaps per step shorter than 1 ms" in f.evidence[2]


# ---- one window per finding: --step N -----------------------------------------------------


def test_step_clips_dataloader_fetches_to_the_window() -> None:
    # before: "2.0 batch fetch(es) per step", the inside-loader operators and the source line
    # (139.9 ms) counted two fetches whole: one starts before step 6's window, one belongs to
    # step 7 and starts 12.8 ms before the window ends
    (f,) = [f for f in advise(_analyses(NW0, step=6), replay=False) if f.id == "input-pipeline"]
    assert f.saving_us == pytest.approx(57669.0)
    assert ("1.0 batch fetch per step, 71.10 ms each on average; 69.87 ms of loader time "
            "per step in the steps") in f.evidence
    assert any(e.startswith("2 fetches straddle the edge of the steps") for e in f.evidence)
    assert "inside the loader: aten::copy_ ×96/step, 5.95 ms self per step" in f.evidence
    assert f.source_lines[0].endswith("(69.87 ms per step)")


def test_step_counts_copies_in_the_window() -> None:
    # before: 115.6 MB per step: the whole trace's pageable copies divided by one step
    (f,) = [f for f in advise(_analyses(NW0, step=6), replay=False) if f.id == "pageable-memcpy"]
    assert "18.38 MiB per step staged through a bounce buffer" in f.evidence[1]
