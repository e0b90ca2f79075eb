"""Issue 21 item 6: a blocking copy waiting on queued device work is a host sync, not warm-up;
a first-call stall with nothing queued still is warm-up."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder
from tests.conftest import shared_trace

from stepscope.analysis.events.links import Links
from stepscope.analysis.events.warmup import FIRST_CALL_MIN_NS, first_launches
from stepscope.analysis.suite import run_analyses
from stepscope.formats import load_trace
from stepscope.report.build import build_report

KERNEL = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>"
STALL_US = 463_000.0


def _steady(b: TraceBuilder, t0: float) -> None:
    for i in range(100):
        o = b.op("aten::mm", t0 + i * 100, 30)
        b.launch(o, "hipLaunchKernel", t0 + i * 100 + 2, 5, kernel=KERNEL,
                 k_ts=t0 + i * 100 + 10, k_dur=90)


def _blocking_copy(b: TraceBuilder, *, queued_before: bool) -> None:
    """hipMemcpyWithStream of 463 ms behind hipStreamWaitEvent. With ``queued_before`` a
    kernel launched at 0.12 ms on another stream only runs at the end of the copy call
    (the copy's stream waits for it); without, nothing is queued (a first call)."""
    if queued_before:
        o = b.op("aten::fill_", 100, 30)
        b.launch(o, "hipLaunchKernel", 115, 5, kernel=KERNEL, k_ts=STALL_US + 100, k_dur=50,
                 stream=1)
    b.runtime("hipStreamWaitEvent", 130, 2)
    o = b.op("aten::copy_", 135, STALL_US + 200)
    b.launch(o, "hipMemcpyWithStream", 140, STALL_US, kernel="Memcpy DtoH (Device -> Host)",
             k_ts=STALL_US + 160, k_dur=20, cat="gpu_memcpy", stream=2)
    _steady(b, STALL_US + 500)


def test_blocking_copy_waiting_on_queued_work_is_a_sync_not_warmup(tmp_path: Path) -> None:
    b = TraceBuilder()
    _blocking_copy(b, queued_before=True)
    r = build_report(b.load(tmp_path))
    data = r.to_json()
    assert data["warmup"] is None  # stays in steady state
    ids = [f.id for f in r.findings]
    assert "warmup-in-window" not in ids
    assert "host-sync" in ids
    sync = next(f for f in r.findings if f.id == "host-sync")
    assert any("hipMemcpyWithStream" in e for e in sync.evidence)


def test_blocking_copy_with_nothing_queued_is_still_warmup(tmp_path: Path) -> None:
    b = TraceBuilder()
    _blocking_copy(b, queued_before=False)
    data = build_report(b.load(tmp_path)).to_json()
    w = data["warmup"]
    assert w is not None and w["calls"] == ["hipMemcpyWithStream"]


def test_real_first_call_stall_is_still_warmup() -> None:
    """ptrans-a100-gpu: a 1.34 s cudaLaunchKernel (lazy load / cuDNN warm-up)."""
    a = run_analyses(load_trace(str(shared_trace(
        "outside/ptrans-a100-gpu/gpu_working_chrome_trace.json"))))
    assert a.warmup is not None and a.warmup.calls == ("cudaLaunchKernel",)
    assert a.warmup.stall_ns == pytest.approx(1_337_130_090)


@pytest.mark.parametrize(("what", "first"), [
    ("kernel, devices idle", True),  # a module loaded on the kernel's first launch
    ("kernel, queue full", False),  # blocked on a full launch queue: the device is busy
    ("pageable copy", False),  # a copy loads no module
])
def test_first_launches_are_module_loads(tmp_path: Path, what: str, first: bool) -> None:
    """A 5 ms launch call whose later launches of the same kernel take 5 µs is a first
    launch (lazy module loading) only for a kernel, and only when the devices were not
    busy for half the call or more (a launch blocked on a full queue returns when a queued
    kernel finishes)."""
    b = TraceBuilder()
    with b.step(1, 0, 20_000):
        if what == "kernel, queue full":
            o = b.op("aten::mm", 0, 10)
            b.launch(o, "cudaLaunchKernel", 1, 5, kernel="long_kernel", k_ts=10, k_dur=6000,
                     stream=3)
        o = b.op("aten::add", 100, 5100)
        if what == "pageable copy":
            b.launch(o, "cudaMemcpyAsync", 110, 5000, kernel="Memcpy HtoD (Pageable -> Device)",
                     k_ts=150, k_dur=4900, cat="gpu_memcpy")
        else:
            b.launch(o, "cudaLaunchKernel", 110, 5000, kernel=KERNEL, k_ts=5120, k_dur=10)
        for t in (8000, 9000):
            o = b.op("aten::add", t, 20)
            b.launch(o, "cudaLaunchKernel", t + 1, 5, kernel=KERNEL, k_ts=t + 10, k_dur=10)
            o = b.op("aten::copy_", t + 100, 20)
            b.launch(o, "cudaMemcpyAsync", t + 101, 5, kernel="Memcpy HtoD (Pageable -> Device)",
                     k_ts=t + 110, k_dur=5, cat="gpu_memcpy")
    trace = b.load(tmp_path)
    rows = first_launches(trace, Links(trace), FIRST_CALL_MIN_NS)
    assert (len(rows) == 1) is first
