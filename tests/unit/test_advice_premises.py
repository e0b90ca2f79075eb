"""Issue 21: no rule fires where its premise is false (capture-only windows, long launch
queues) and severity weighs the absolute saving, each with a firing and a silent case."""

from __future__ import annotations

from pathlib import Path

from tests.builders import TraceBuilder

from stepscope.advice import NEEDS_EXECUTED_WORK, Finding, advise
from stepscope.analysis.suite import run_analyses
from stepscope.report.build import build_report

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_kernel"


def _findings(b: TraceBuilder, tmp_path: Path) -> list[Finding]:
    return advise(run_analyses(b.load(tmp_path)))


def _cpu_between_kernels(b: TraceBuilder, *, capture: bool) -> None:
    """A 10 ms step: a few kernels, then 5 ms of a CPU-only operator with the GPU idle."""
    with b.step(1, 0, 10_000):
        if capture:
            b.runtime("cudaStreamBeginCapture", 5, 2)
        for i in range(4):
            o = b.op("aten::mm", 10 + i * 20, 15)
            b.launch(o, "cudaLaunchKernel", 12 + i * 20, 5, kernel=GEMM, k_ts=30 + i * 20,
                     k_dur=10)
        b.op("aten::nonzero", 200, 5000)
        if capture:
            b.runtime("cudaStreamEndCapture", 9000, 2)


def test_cpu_ops_fire_on_executed_work(tmp_path: Path) -> None:
    b = TraceBuilder()
    _cpu_between_kernels(b, capture=False)
    assert "cpu-ops-in-gpu-job" in [f.id for f in _findings(b, tmp_path)]


def test_capture_only_window_skips_rules_that_need_executed_work(tmp_path: Path) -> None:
    b = TraceBuilder()
    _cpu_between_kernels(b, capture=True)
    a = run_analyses(b.load(tmp_path))
    assert a.graphs is not None and a.graphs.capture_only
    assert not {f.id for f in advise(a)} & NEEDS_EXECUTED_WORK
    notes = build_report(b.load(tmp_path)).to_json()["notes"]
    assert any("graph capture" in n and "cpu-ops-in-gpu-job" in n for n in notes)
