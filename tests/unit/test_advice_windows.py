"""Issue 21: no rule fires where its premise is false (capture-only windows, long launch
queues) and severity weighs the absolute saving, each with a firing and a silent case."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.advice import NEEDS_EXECUTED_WORK, Finding, advise
from stepscope.analysis.suite import run_analyses
from stepscope.report.build import build_report

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_kernel"


def _findings(b: TraceBuilder, tmp_path: Path) -> list[Finding]:
    return advise(run_analyses(b.load(tmp_path)), replay=False)


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


# ---- launch-bound: the GPU waits for launches, not for a queue ----------------------------


def _queued_burst(b: TraceBuilder) -> None:
    """A 20 ms step: 1,000 launches every 7 µs (80 % short kernels, every fifth 40 µs), so
    a queue builds and kernels start milliseconds after their launch; then host work and one
    last kernel at 15 ms: a 5 ms host-wait gap that is not launch overhead."""
    with b.step(1, 0, 20_000):
        gpu_free = 0.0
        for i in range(1000):
            t = i * 7.0
            o = b.op("aten::add", t, 6.5)
            k_dur = 40.0 if i % 5 == 0 else 2.0
            k_ts = max(t + 7.0, gpu_free)
            gpu_free = k_ts + k_dur
            b.launch(o, "cudaLaunchKernel", t + 0.5, 6, kernel="void kernel_small", k_ts=k_ts,
                     k_dur=k_dur)
        b.op("aten::nonzero", 10_000, 4_000)
        o = b.op("aten::add", 15_000, 8)
        b.launch(o, "cudaLaunchKernel", 15_001, 6, kernel="void kernel_small", k_ts=15_008,
                 k_dur=2)


def test_launch_bound_is_silent_when_work_is_queued(tmp_path: Path) -> None:
    b = TraceBuilder()
    _queued_burst(b)
    a = run_analyses(b.load(tmp_path))
    assert a.launches is not None and a.launches.delay_p50_ns > 1_000_000  # a deep queue
    assert "launch-bound" not in [f.id for f in advise(a)]


def test_launch_bound_evidence_shows_the_gpu_waiting_for_launches(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        b.small_launches(1000, 10)
    (f,) = [f for f in _findings(b, tmp_path) if f.id == "launch-bound"]
    assert any("999 gaps per step shorter than 1 ms" in e and "started 1.0 µs (median) after"
               in e for e in f.evidence)
    assert any(e.startswith("median launch delay in the steps 1.0 µs") for e in f.evidence)


# ---- severity weighs the absolute saving per step --------------------------------------


def test_severity_needs_share_and_absolute_saving() -> None:
    def sev(us: float, pct: float) -> str:
        return Finding(id="x", title="x", saving_us=us, saving_pct=pct, estimate="",
                       evidence=(), fix="").severity
    assert sev(0.1, 50.0) == "low"  # half of a tiny step: below one launch's cost
    assert sev(50.0, 50.0) == "medium"
    assert sev(150.0, 50.0) == "high"
    assert sev(5_000.0, 2.0) == "low"  # a small share stays low however long the step


def _sync_step(b: TraceBuilder, scale: float) -> None:
    """One step: a kernel, then a sync taking 40 % of the step (step = 100 µs × scale)."""
    with b.step(1, 0, 100 * scale):
        mm = b.op("aten::mm", 1 * scale, 5 * scale)
        b.launch(mm, "cudaLaunchKernel", 2 * scale, 2 * scale, kernel=GEMM, k_ts=5 * scale,
                 k_dur=10 * scale)
        item = b.op("aten::item", 20 * scale, 45 * scale)
        b.runtime("cudaStreamSynchronize", 21 * scale, 40 * scale, owner=item)


@pytest.mark.parametrize(("scale", "severity"), [(100.0, "high"), (1.0, "medium")])
def test_host_sync_severity_by_size(tmp_path: Path, scale: float, severity: str) -> None:
    b = TraceBuilder()
    _sync_step(b, scale)
    (f,) = [f for f in _findings(b, tmp_path) if f.id == "host-sync"]
    assert f.saving_pct == pytest.approx(40.0)
    assert f.severity == severity  # 4 ms of a 10 ms step is high; 40 µs of 100 µs is not


# ---- one window per finding ----------------------------------------------------------------

NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def test_exposed_communication_lists_kernels_of_the_steps_only(tmp_path: Path) -> None:
    """Six all-reduces before the first step (warm-up) are not the step's communication."""
    b = TraceBuilder()
    for i in range(6):
        o = b.op("nccl:all_reduce", 100 + i * 1000, 20)
        b.launch(o, "cudaLaunchKernel", 105 + i * 1000, 5, kernel=NCCL, k_ts=200 + i * 1000,
                 k_dur=800, stream=9)
    with b.step(1, 10_000, 10_000):
        for i in range(40):
            o = b.op("aten::mm", 10_010 + i * 20, 15)
            b.launch(o, "cudaLaunchKernel", 10_012 + i * 20, 5, kernel=GEMM,
                     k_ts=11_000 + i * 100, k_dur=100)
        o = b.op("nccl:all_reduce", 10_900, 20)
        b.launch(o, "cudaLaunchKernel", 10_905, 5, kernel=NCCL, k_ts=15_000, k_dur=4000,
                 stream=9)
    (f,) = [f for f in _findings(b, tmp_path) if f.id == "exposed-communication"]
    assert f.saving_us == pytest.approx(4000.0)
    assert any("×1/step, 4.00 ms per step" in e for e in f.evidence)  # not ×7/step, 8.80 ms
    assert "communication kernels: 50 % of kernel time in the steps" in f.evidence


def test_launch_threshold_counts_are_named_and_most_launches_are_no_outliers() -> None:
    from stepscope.report.text.render import _over

    assert _over(6, 9_096, "launch calls over 50 µs") == "launch calls over 50 µs: 6"
    assert _over(7_264, 9_096, "delayed over 100 µs", most="work is queued ahead of the GPU") \
        == ("delayed over 100 µs: 7,264 of 9,096 (80 %, most launches: work is queued ahead "
            "of the GPU)")


def test_no_findings_on_a_capture_window_says_why() -> None:
    """Under the capture note, "no rule found a problem" read as if every rule had run."""
    import io

    from rich.console import Console

    from stepscope.report.text.findings import render_findings

    out = io.StringIO()
    render_findings(Console(file=out, width=200, color_system=None), [], skipped=10)
    assert out.getvalue().strip() == ("Findings: none — 10 rules do not apply to this window "
                                      "(see the note above) and no other rule found a problem "
                                      "worth fixing.")
