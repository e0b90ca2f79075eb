"""GPU utilization, est. SM efficiency, est. achieved occupancy, Tensor Core share."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.events.steps import find_steps
from stepscope.analysis.trace.gpu import gpu_metrics, sm_efficiency
from stepscope.model import Trace

US = 1000


def _trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    op = b.op("aten::mm", 1, 8)
    # two concurrent kernels on two streams; Σ blocks/SM 1.25 on [20,30] counts as 1
    b.launch(op, "cudaLaunchKernel", 2, 1, kernel="k1", k_ts=10, k_dur=20, stream=7,
             **{"blocks per SM": 0.5, "est. achieved occupancy %": 40})
    b.launch(op, "cudaLaunchKernel", 4, 1, kernel="k2", k_ts=20, k_dur=20, stream=8,
             **{"blocks per SM": 0.75, "est. achieved occupancy %": 60})
    # blocks per SM 4 > 1 is capped at 1; a Tensor Core kernel (h884)
    b.launch(op, "cudaLaunchKernel", 6, 1, kernel="volta_h884gemm_64x64", k_ts=60, k_dur=10,
             **{"blocks per SM": 4, "est. achieved occupancy %": 20})
    return b.load(tmp_path)


def test_metrics_over_step_window(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    steps = find_steps(trace)
    assert steps.window == (0, 100 * US)
    (g,) = gpu_metrics(trace, steps.window)
    assert g.device == 0
    assert g.name == "NVIDIA H100 80GB HBM3"
    assert g.busy_ns == 40 * US  # [10,40] ∪ [60,70]
    assert g.window_ns == 100 * US
    assert g.utilization_pct == pytest.approx(40.0)
    # 0.5·10 + 1·10 (capped 1.25) + 0.75·10 + 1·10 (capped 4) = 32.5 µs
    assert g.sm_efficiency_pct == pytest.approx(32.5)
    # duration-weighted: (40·20 + 60·20 + 20·10) / 50
    assert g.achieved_occupancy_pct == pytest.approx(44.0)
    assert g.tensor_core_pct == pytest.approx(20.0)  # 10 of 50 µs
    assert g.kernel_ns == 50 * US


def test_metrics_clipped_to_window(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    (g,) = gpu_metrics(trace, (0, 25 * US))
    assert g.utilization_pct == pytest.approx(60.0)  # [10,25] of 25
    assert g.sm_efficiency_pct == pytest.approx(40.0)  # (0.5·10 + 1·5) / 25
    assert g.achieved_occupancy_pct == pytest.approx(45.0)  # (40·15 + 60·5) / 20
    assert g.tensor_core_pct == pytest.approx(20.0)  # whole trace, not clipped


def test_sm_efficiency_function() -> None:
    import numpy as np

    ts = np.array([0, 0], np.int64)
    end = np.array([10, 10], np.int64)
    assert sm_efficiency(ts, end, np.array([0.3, 0.3], np.float32), 0, 10) == pytest.approx(6.0)
    assert sm_efficiency(ts, end, np.array([0.8, 0.8], np.float32), 0, 10) == pytest.approx(10.0)
    assert sm_efficiency(ts, end, np.array([0.0, 0.0], np.float32), 0, 10) == 0.0
    assert sm_efficiency(ts, end, np.array([1.0, 1.0], np.float32), 5, 5) == 0.0


def test_missing_estimates_give_none(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    op = b.op("aten::mm", 1, 8)
    b.launch(op, "cudaLaunchKernel", 2, 1, kernel="k", k_ts=10, k_dur=20)
    b.device_op(None, "unowned_s884_kernel", 50, 10)  # not launched by an operator
    trace = b.load(tmp_path)
    (g,) = gpu_metrics(trace, find_steps(trace).window)
    assert g.sm_efficiency_pct is None
    assert g.achieved_occupancy_pct is None
    assert g.utilization_pct == pytest.approx(30.0)
    assert g.tensor_core_pct == 0.0  # the TC kernel has no runtime call: not counted
