"""The nsys analyze rules (firing and silent) and NVTX steps, on synthetic nsys exports."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from tests.nsys_builders import NsysBuilder

from stepscope.advice import Finding, advise
from stepscope.analysis.suite import run_analyses
from stepscope.formats import load_trace
from stepscope.model.trace import MEM_DEVICE, MEM_MANAGED, MEM_PAGEABLE, MEM_PINNED
from stepscope.report.build import build_report

MS = 1_000_000
STEP = 10 * MS


def _steps(extra: Callable[[NsysBuilder, int], None], n: int = 4,
           kernels: int = 4, k_dur: int = 1 * MS) -> NsysBuilder:
    """``n`` steps of STEP ns marked with NVTX ``step i``; each launches ``kernels`` kernels
    back to back at its start, then ``extra(builder, step_start)`` adds the problem."""
    b = NsysBuilder()
    for i in range(n):
        t0 = i * STEP
        b.nvtx(f"step {i}", t0, t0 + STEP - 1000, domain="stepscope")
        for j in range(kernels):
            b.launch("cudaLaunchKernel_v7000", t0 + j * 1000, 500, kernel="ampere_sgemm",
                     k_ts=t0 + 10_000 + j * k_dur, k_dur=k_dur)
        extra(b, t0)
    return b


def _findings(b: NsysBuilder, tmp_path: Path) -> list[Finding]:
    t = load_trace(str(b.write(tmp_path / "r.sqlite")), use_cache=False)
    return advise(run_analyses(t), replay=False)


def _get(fs: list[Finding], rule: str) -> Finding | None:
    return next((f for f in fs if f.id == rule), None)


def test_steps_come_from_nvtx_ranges(tmp_path: Path) -> None:
    b = _steps(lambda b, t0: None, n=3)
    report = build_report(load_trace(str(b.write(tmp_path / "s.sqlite")), use_cache=False))
    steps = report.analyses.steps
    assert steps.profiler_steps
    assert [s.name for s in steps.steps] == ["0", "1", "2"]
    assert steps.steps[0].device_ops == 4
    data = report.to_json()
    assert [s["name"] for s in data["steps"]] == ["0", "1", "2"]
    assert data["breakdown"]["avg_us"]["kernel"] == pytest.approx(4000.0)
    # the original range names stay in the NVTX summary, with their domain
    assert data["nsys"]["nvtx_sum"][0]["name"].startswith("stepscope:step ")


def _pageable_async(src: int) -> Callable[[NsysBuilder, int], None]:
    def add(b: NsysBuilder, t0: int) -> None:
        b.copy("cudaMemcpyAsync_v3020", t0 + 5 * MS, 2 * MS, c_ts=t0 + 6_800_000,
               c_dur=200_000, src=src, dst=MEM_DEVICE, copy_kind=1)
    return add


def test_async_memcpy_pageable_fires(tmp_path: Path) -> None:
    f = _get(_findings(_steps(_pageable_async(MEM_PAGEABLE)), tmp_path), "async-memcpy-pageable")
    assert f is not None
    assert f.saving_us == pytest.approx(1800.0, rel=0.01)  # 2 ms call - 0.2 ms copy
    assert "pinned" in f.fix or "page-locked" in f.fix


def test_async_memcpy_pinned_is_silent(tmp_path: Path) -> None:
    fs = _findings(_steps(_pageable_async(MEM_PINNED)), tmp_path)
    assert _get(fs, "async-memcpy-pageable") is None


def _sync_copy(api: str, nbytes: int, copy_kind: int = 2) -> Callable[[NsysBuilder, int], None]:
    def add(b: NsysBuilder, t0: int) -> None:
        b.copy(api, t0 + 5 * MS, 2 * MS, c_ts=t0 + 6_500_000, c_dur=300_000, nbytes=nbytes,
               copy_kind=copy_kind, src=MEM_DEVICE, dst=MEM_PAGEABLE)
    return add


def test_sync_memcpy_fires(tmp_path: Path) -> None:
    f = _get(_findings(_steps(_sync_copy("cudaMemcpy_v3020", 1 << 20)), tmp_path), "sync-memcpy")
    assert f is not None
    assert f.saving_us == pytest.approx(2000.0, rel=0.01)  # the whole call, GPU idle then
    assert any("cudaMemcpy" in e for e in f.evidence)


@pytest.mark.parametrize(("api", "nbytes", "kind"), [
    ("cudaMemcpyAsync_v3020", 1 << 20, 2),  # asynchronous
    ("cudaMemcpy_v3020", 4096, 1),  # small host-to-device copies are ignored, as in nsys
])
def test_sync_memcpy_silent(tmp_path: Path, api: str, nbytes: int, kind: int) -> None:
    fs = _findings(_steps(_sync_copy(api, nbytes, kind)), tmp_path)
    assert _get(fs, "sync-memcpy") is None


def _memset(api: str, kind: int) -> Callable[[NsysBuilder, int], None]:
    def add(b: NsysBuilder, t0: int) -> None:
        corr = b.api(api, t0 + 5 * MS, 1 * MS)
        b.memset(t0 + 5_500_000, 10_000, corr=corr, mem_kind=kind)
    return add


@pytest.mark.parametrize("kind", [MEM_PINNED, MEM_MANAGED])
def test_sync_memset_fires(tmp_path: Path, kind: int) -> None:
    f = _get(_findings(_steps(_memset("cudaMemset_v3020", kind)), tmp_path), "sync-memset")
    assert f is not None
    assert f.saving_us == pytest.approx(1000.0, rel=0.01)


@pytest.mark.parametrize(("api", "kind"), [("cudaMemset_v3020", MEM_DEVICE),
                                           ("cudaMemsetAsync_v3020", MEM_PINNED)])
def test_sync_memset_silent(tmp_path: Path, api: str, kind: int) -> None:
    assert _get(_findings(_steps(_memset(api, kind)), tmp_path), "sync-memset") is None


def test_gpu_low_utilization_fires_on_many_small_gaps(tmp_path: Path) -> None:
    # 20 kernels of 100 µs every 400 µs: 25 % in use, gaps of 300 µs (< 1 ms)
    b = NsysBuilder()
    for i in range(3):
        t0 = i * STEP
        b.nvtx(f"step {i}", t0, t0 + 8 * MS)
        for j in range(20):
            b.launch("cudaLaunchKernel", t0 + j * 400_000, 10_000, kernel="small",
                     k_ts=t0 + j * 400_000 + 50_000, k_dur=100_000)
    fs = _findings(b, tmp_path)
    f = _get(fs, "gpu-low-utilization")
    assert f is not None
    assert f.saving_pct > 50
    assert _get(fs, "gpu-gaps") is None  # no gap reaches 1 ms


def test_gpu_low_utilization_silent_when_busy(tmp_path: Path) -> None:
    b = NsysBuilder()
    for i in range(3):
        t0 = i * STEP
        b.nvtx(f"step {i}", t0, t0 + 8 * MS)
        for j in range(20):
            b.launch("cudaLaunchKernel", t0 + j * 10_000, 5_000, kernel="big",
                     k_ts=t0 + 50_000 + j * 400_000, k_dur=400_000)
    assert _get(_findings(b, tmp_path), "gpu-low-utilization") is None


def test_host_sync_rule_sees_versioned_sync_calls(tmp_path: Path) -> None:
    def add(b: NsysBuilder, t0: int) -> None:
        corr = b.api("cudaStreamSynchronize_v3020", t0 + 500_000, 4 * MS)
        b.sync(t0 + 4 * MS, 100_000, corr=corr)
    assert _get(_findings(_steps(add), tmp_path), "host-sync") is not None


def test_step_option_selects_an_nvtx_step(tmp_path: Path) -> None:
    b = _steps(lambda b, t0: None, n=3)
    t = load_trace(str(b.write(tmp_path / "s.sqlite")), use_cache=False)
    data = build_report(t, step=1).to_json()
    assert [s["name"] for s in data["steps"]] == ["1"]
    assert data["steps"][0]["start_us"] == pytest.approx(STEP / 1000, abs=1)
