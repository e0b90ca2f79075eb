"""Steps (device-aware, tail trimming, fallback, selection) and the step-time breakdown."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.events.steps import find_steps, select_step
from stepscope.analysis.trace.breakdown import CATEGORIES, step_breakdown
from stepscope.errors import UsageError

US = 1000  # ns per µs
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _kernels(b: TraceBuilder, ts: float, n: int, k_ts: float, k_dur: float) -> None:
    """n launches from one aten::mm starting at ts; kernels back to back from k_ts."""
    op = b.op("aten::mm", ts, 1 + 2 * n)
    for i in range(n):
        b.launch(op, "cudaLaunchKernel", ts + 0.5 + 2 * i, 1, kernel="k",
                 k_ts=k_ts + i * k_dur, k_dur=k_dur)


def test_steps_extend_to_device_work_without_overlap(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    _kernels(b, 10, 1, k_ts=30, k_dur=150)  # runs until 180, past the host step end
    b.annotation("ProfilerStep#2", 100, 100)
    _kernels(b, 110, 1, k_ts=190, k_dur=20)  # ends at 210
    steps = find_steps(b.load(tmp_path))
    assert steps.profiler_steps
    assert [(s.name, s.start, s.end) for s in steps.steps] == [
        ("1", 0, 180 * US), ("2", 180 * US, 210 * US)]
    assert [(s.host_start, s.host_end, s.device_ops) for s in steps.steps] == [
        (0, 100 * US, 1), (100 * US, 200 * US, 1)]
    assert steps.window == (0, 210 * US)
    assert steps.dropped == ()


def test_steps_keep_host_start_when_later_than_previous_end(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    _kernels(b, 10, 1, k_ts=20, k_dur=30)
    b.annotation("ProfilerStep#2", 120, 100)  # gap 100..120 stays outside any step
    _kernels(b, 130, 1, k_ts=140, k_dur=30)
    steps = find_steps(b.load(tmp_path))
    assert [(s.start, s.end) for s in steps.steps] == [(0, 100 * US), (120 * US, 220 * US)]


@pytest.mark.parametrize(("tail_kernels", "kept"), [(3, ["1", "2"]), (4, ["1", "2", "3"]),
                                                     (0, ["1", "2"])])
def test_tail_step_trimmed_below_80_percent(tmp_path: Path, tail_kernels: int,
                                            kept: list[str]) -> None:
    b = TraceBuilder()
    for n, t0 in ((1, 0), (2, 100), (3, 200)):
        b.annotation(f"ProfilerStep#{n}", t0, 100)
        count = 5 if n < 3 else tail_kernels
        if count:
            _kernels(b, t0 + 10, count, k_ts=t0 + 30, k_dur=5)
        else:
            b.op("aten::add", t0 + 10, 5)
    steps = find_steps(b.load(tmp_path))
    assert [s.name for s in steps.steps] == kept
    assert list(steps.dropped) == [n for n in ("1", "2", "3") if n not in kept]


def test_whole_trace_fallback_without_profiler_steps(tmp_path: Path) -> None:
    b = TraceBuilder()
    op = b.op("aten::mm", 10, 20)
    b.launch(op, "cudaLaunchKernel", 12, 3, kernel="k", k_ts=40, k_dur=20)
    steps = find_steps(b.load(tmp_path))
    assert not steps.profiler_steps
    assert [(s.name, s.start, s.end, s.device_ops) for s in steps.steps] == [
        ("0", 10 * US, 60 * US, 1)]
    assert steps.dropped == ()


def test_select_step_and_error_message(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#7", 0, 50)
    b.annotation("ProfilerStep#8", 50, 50)
    b.op("aten::add", 10, 5)
    steps = find_steps(b.load(tmp_path))
    only = select_step(steps, 8)
    assert [(s.name, s.start, s.end) for s in only.steps] == [("8", 50 * US, 100 * US)]
    with pytest.raises(UsageError) as err:
        select_step(steps, 9)
    assert str(err.value) == "step 9 is not in the trace (steps: 7, 8)"
    assert err.value.exit_code == 2


def test_breakdown_tb_readme_priority_example(tmp_path: Path) -> None:
    """tb README: kernel on [2,7], memcpy inside it, CPU op on [1,3] → Kernel 5, Memcpy 0,
    CPU Exec 1 (the rest of the step is Other)."""
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 10)
    b.device_op(None, "k", 2, 5)
    b.device_op(None, "Memcpy HtoD (Pageable -> Device)", 3, 2, cat="gpu_memcpy")
    b.op("aten::copy_", 1, 2)
    b.runtime("cudaStreamSynchronize", 8, 1)  # an unrelated runtime call: Runtime 1
    trace = b.load(tmp_path)
    bd = step_breakdown(trace, find_steps(trace))
    (row,) = bd.steps
    assert row.duration == 10 * US
    assert row.ns == {"kernel": 5 * US, "memcpy": 0, "memset": 0, "communication": 0,
                      "runtime": 1 * US, "dataloader": 0, "cpu_exec": 1 * US, "other": 3 * US}


def test_steps_with_device_ops_but_no_runtime_calls(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 10)
    b.device_op(None, "k", 2, 5)
    steps = find_steps(b.load(tmp_path))
    assert [(s.start, s.end) for s in steps.steps] == [(0, 10 * US)]


def test_breakdown_all_categories_sum_to_step(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 50)
    add = b.op("aten::add", 10, 10)  # cpu_exec [10,20] minus runtime [12,14]
    b.launch(add, "cudaLaunchKernel", 12, 2, kernel="k", k_ts=25, k_dur=10)
    b.annotation("ProfilerStep#2", 100, 100)
    b.op(LOADER, 101, 9)  # dataloader [101,110]
    op = b.op("aten::mm", 110, 20)  # cpu_exec: [110,130] minus runtime and kernel
    b.launch(op, "cudaLaunchKernel", 112, 3, kernel="k", k_ts=120, k_dur=10)  # kernel
    b.launch(op, "cudaMemsetAsync", 116, 2, kernel="Memset (Device)", k_ts=130, k_dur=2,
             cat="gpu_memset")
    b.launch(op, "cudaMemcpyAsync", 119, 1, kernel="Memcpy DtoD (Device -> Device)", k_ts=132,
             k_dur=4, cat="gpu_memcpy")
    ar = b.op("nccl:all_reduce", 140, 5)  # communication: host [140,145] + kernel [145,160]
    b.launch(ar, "cudaLaunchKernel", 141, 2, kernel="ncclKernel_AllReduce_RING_LL_Sum_float",
             k_ts=145, k_dur=15)
    trace = b.load(tmp_path)
    steps = find_steps(trace)
    assert [(s.start, s.end) for s in steps.steps] == [(0, 50 * US), (100 * US, 200 * US)]
    bd = step_breakdown(trace, steps)
    s1, s2 = bd.steps
    assert s1.ns == {"kernel": 10 * US, "memcpy": 0, "memset": 0, "communication": 0,
                     "runtime": 2 * US, "dataloader": 0, "cpu_exec": 8 * US, "other": 30 * US}
    # the runtime call inside nccl:all_reduce is claimed by Communication (higher priority)
    assert s2.ns == {"kernel": 10 * US, "memcpy": 4 * US, "memset": 2 * US,
                     "communication": 20 * US, "runtime": 6 * US, "dataloader": 9 * US,
                     "cpu_exec": 4 * US, "other": 45 * US}
    for row in bd.steps:
        assert sum(row.ns.values()) == row.duration
        assert set(row.ns) == set(CATEGORIES)
    assert bd.avg_step_ns == 75 * US
    assert bd.avg_ns["cpu_exec"] == 6 * US
    assert bd.avg_ns["other"] == 37.5 * US
    assert bd.pct["other"] == pytest.approx(50.0)
    assert sum(bd.pct.values()) == pytest.approx(100.0)


@pytest.mark.parametrize(("window_end_us", "step_end_us"), [(2_000, 2_000), (None, 10_000)])
def test_steps_end_where_the_collection_ends(tmp_path: Path, window_end_us: float | None,
                                             step_end_us: float) -> None:
    # hta/triton_example: ProfilerStep#1 lasts 13.3 s, the collection ("PyTorch Profiler
    # (0)") ends 1.7 ms after it begins; nothing after the window was recorded
    b = TraceBuilder()
    if window_end_us is not None:
        b._complete("Trace", "PyTorch Profiler (0)", 1, 1, 0, window_end_us, {})
    with b.step(1, 0, 10_000):
        o = b.op("aten::add", 10, 20)
        b.launch(o, "cudaLaunchKernel", 12, 5, kernel="void add_kernel", k_ts=30, k_dur=2)
    (step,) = find_steps(b.load(tmp_path)).steps
    assert (step.start, step.end) == (0, step_end_us * 1000)
