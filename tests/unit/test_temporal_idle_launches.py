"""Temporal breakdown, per-stream idle classification and launch statistics."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.trace.idle import idle_breakdown
from stepscope.analysis.trace.launches import launch_stats
from stepscope.analysis.trace.temporal import temporal_breakdown
from stepscope.model import Trace

US = 1000

# (api, runtime ts, runtime dur, kernel ts, kernel dur), all on stream 7
LAUNCHES = [
    ("cudaLaunchKernel", 90, 2, 100, 10),  # first op
    ("cudaLaunchKernel", 95, 2, 115, 10),  # queued before the gap: kernel wait 5
    ("cuLaunchKernel", 150, 1, 200, 10),  # launched after the stream idled: host wait 75
    ("cudaLaunchKernel", 152, 4, 205, 3),  # overlaps the previous kernel; short (3 < 4)
    ("cudaLaunchKernel", 156, 1, 212, 8),  # gap from running max end 210: kernel wait 2
    ("cudaLaunchKernel", 160, 60, 400, 10),  # runtime outlier; delay 180; gap 180: other
]


def _stream_trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    op = b.op("aten::foo", 80, 200)
    for api, ts, dur, k_ts, k_dur in LAUNCHES:
        b.launch(op, api, ts, dur, kernel=f"k{k_ts}", k_ts=k_ts, k_dur=k_dur)
    b.runtime("cudaStreamSynchronize", 230, 5)  # not a launch
    return b.load(tmp_path)


def test_idle_classification_one_stream(tmp_path: Path) -> None:
    (s,) = idle_breakdown(_stream_trace(tmp_path))
    assert (s.device, s.stream) == (0, 7)
    assert s.span_ns == 310 * US
    assert (s.host_wait_ns, s.kernel_wait_ns, s.other_ns) == (75 * US, 7 * US, 180 * US)
    assert s.idle_ns == 262 * US
    assert s.busy_ns == 48 * US
    assert s.largest_gaps[0] == (220 * US, 180 * US, "other")
    assert s.largest_gaps[1] == (125 * US, 75 * US, "host_wait")
    assert len(s.largest_gaps) == 4  # the overlap (negative gap) is not a gap


def test_launch_stats_counts_culaunchkernel(tmp_path: Path) -> None:
    L = launch_stats(_stream_trace(tmp_path))
    assert L is not None
    assert L.launches == 6  # cuLaunchKernel included, cudaStreamSynchronize not
    assert L.short_kernels == 1
    assert L.runtime_outliers == 1
    assert L.launch_delay_outliers == 1
    assert L.cpu_total_ns == 70 * US
    assert L.gpu_total_ns == 51 * US
    assert L.delay_max_ns == 180 * US
    # delays: 8, 18, 49, 49, 55, 180
    assert L.delay_mean_ns == pytest.approx(359 / 6 * US)
    assert L.delay_p50_ns == pytest.approx(49 * US)
    assert (L.short_kernel_gpu_ns, L.short_kernel_cpu_ns) == (3 * US, 4 * US)


def test_launch_stats_none_without_device_work(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", 0, 10)
    assert launch_stats(b.load(tmp_path)) is None


def test_short_kernel_uses_exact_ns(tmp_path: Path) -> None:
    """gpu 1.4 µs < cpu 1.6 µs is short; HTA's µs rounding would make both 2 (not short)."""
    b = TraceBuilder()
    op = b.op("aten::foo", 0, 10)
    b.launch(op, "cudaLaunchKernel", 1, 1.6, kernel="k", k_ts=5, k_dur=1.4)
    L = launch_stats(b.load(tmp_path))
    assert L is not None
    assert L.short_kernels == 1


def _temporal_trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    op = b.op("aten::foo", 0, 100)
    b.launch(op, "cudaLaunchKernel", 1, 1, kernel="a", k_ts=100, k_dur=10, stream=7)
    b.launch(op, "cudaMemcpyAsync", 2, 1, kernel="Memcpy HtoD", k_ts=110, k_dur=5,
             cat="gpu_memcpy", stream=7)
    b.launch(op, "cudaLaunchKernel", 3, 1, kernel="b", k_ts=112, k_dur=8, stream=8)
    b.launch(op, "cudaLaunchKernel", 50, 1, kernel="ncclKernel_AllReduce_RING_LL_Sum_float",
             k_ts=130, k_dur=10, stream=9)
    b.launch(op, "cudaLaunchKernel", 51, 1, kernel="c", k_ts=135, k_dur=3, stream=7)
    return b.load(tmp_path)


def test_temporal_breakdown(tmp_path: Path) -> None:
    t = temporal_breakdown(_temporal_trace(tmp_path))
    assert t is not None
    # span [100,140]; busy [100,120] ∪ [130,140]; compute a ∪ b ∪ c = 10 + 8 + 3;
    # non-compute: memcpy alone [110,112] + nccl alone [130,135] ∪ [138,140]
    assert (t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns) == (
        40 * US, 10 * US, 21 * US, 9 * US)
    assert t.pct(t.idle_ns) == pytest.approx(25.0)
    assert t.pct(t.compute_ns) == pytest.approx(52.5)
    assert t.pct(t.non_compute_ns) == pytest.approx(22.5)


def test_temporal_launched_before_filter(tmp_path: Path) -> None:
    trace = _temporal_trace(tmp_path)
    t = temporal_breakdown(trace, launched_before=10 * US)  # drops the two late launches
    assert t is not None
    assert (t.span_ns, t.idle_ns, t.compute_ns, t.non_compute_ns) == (
        20 * US, 0, 18 * US, 2 * US)
    assert temporal_breakdown(trace, launched_before=0) is None


def test_temporal_none_for_cpu_only(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", 0, 10)
    trace = b.load(tmp_path)
    assert temporal_breakdown(trace) is None
    assert idle_breakdown(trace) == []
