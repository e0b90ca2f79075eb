"""Operator statistics (self/total, nesting, folding, device times) and kernel grouping."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.trace.kernels import kernel_stats
from stepscope.analysis.trace.operators import OperatorRow, operator_stats
from stepscope.model import Trace


def _trace(tmp_path: Path) -> Trace:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 400)
    lin = b.op("aten::linear", 0, 100)
    b.op("aten::t", 5, 5)
    mm = b.op("aten::addmm", 20, 60)
    b.launch(mm, "cudaLaunchKernel", 30, 5, kernel="k", k_ts=100, k_dur=50)
    b.launch(lin, "cudaLaunchKernel", 90, 4, kernel="k", k_ts=160, k_dur=10)
    # same-name only child folds into its parent (one call)
    outer = b.op("aten::copy_", 200, 20)
    inner = b.op("aten::copy_", 202, 16)
    b.launch(inner, "cudaMemcpyAsync", 205, 2, kernel="Memcpy HtoD (Pageable -> Device)",
             k_ts=230, k_dur=10, cat="gpu_memcpy")
    assert outer is not inner
    # zero-length ops
    b.op("aten::empty", 300, 0)
    b.op("aten::zeros", 310, 10)
    b.op("aten::empty", 310, 0)
    b.op("aten::fill_", 312, 6)
    return b.load(tmp_path)


def _rows(rows: list[OperatorRow]) -> dict[str, tuple[int, float, float, float, float]]:
    return {r.name: (r.calls, r.host_self_us, r.host_total_us, r.device_self_us,
                     r.device_total_us) for r in rows}


def test_operator_self_total_nesting_folding_zero_length(tmp_path: Path) -> None:
    rows = operator_stats(_trace(tmp_path))
    assert _rows(rows) == {
        # 100 - children (5 + 60) - own runtime (4) = 31; device self 10, total 10 + 50
        "aten::linear": (1, 31.0, 100.0, 10.0, 60.0),
        "aten::t": (1, 5.0, 5.0, 0.0, 0.0),
        "aten::addmm": (1, 55.0, 60.0, 50.0, 50.0),
        "aten::copy_": (1, 18.0, 20.0, 10.0, 10.0),
        "aten::empty": (2, 0.0, 0.0, 0.0, 0.0),
        "aten::zeros": (1, 4.0, 10.0, 0.0, 0.0),
        "aten::fill_": (1, 6.0, 6.0, 0.0, 0.0),
    }
    # GPU trace: sorted by device self time, then host self
    assert [r.name for r in rows][:4] == ["aten::addmm", "aten::linear", "aten::copy_",
                                          "aten::fill_"]
    assert {r.name for r in rows if r.tc_eligible} == {"aten::linear", "aten::addmm"}


def test_operator_stats_by_shape(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::add", 0, 10, input_dims=[[2, 3], [2, 3]])
    b.op("aten::add", 20, 4, input_dims=[[2, 3], [2, 3]])
    b.op("aten::add", 30, 6, input_dims=[[8], [8]])
    trace = b.load(tmp_path)
    (row,) = operator_stats(trace)
    assert (row.calls, row.host_self_us) == (3, 20.0)
    by_shape = {(r.input_shape or "").replace(" ", ""): (r.calls, r.host_total_us)
                for r in operator_stats(trace, by_shape=True)}
    assert by_shape == {"[[2,3],[2,3]]": (2, 14.0), "[[8],[8]]": (1, 6.0)}


def test_kernel_grouping(tmp_path: Path) -> None:
    b = TraceBuilder()
    op = b.op("aten::mm", 0, 10)
    for i, (dur, blocks, occ) in enumerate([(10, 1, 10), (20, 2, 20), (30, 3, 30)]):
        b.launch(op, "cudaLaunchKernel", 1 + i, 1, kernel="k", k_ts=20 + 40 * i, k_dur=dur,
                 **{"blocks per SM": blocks, "est. achieved occupancy %": occ,
                    "grid": [4, 1, 1], "block": [128, 1, 1], "registers per thread": 32,
                    "shared memory": 0})
    b.launch(op, "cudaLaunchKernel", 5, 1, kernel="volta_h884gemm", k_ts=200, k_dur=100)
    b.launch(op, "cudaMemcpyAsync", 6, 1, kernel="Memcpy DtoH", k_ts=400, k_dur=100,
             cat="gpu_memcpy")  # not a kernel
    rows = kernel_stats(b.load(tmp_path))
    assert [r.name for r in rows] == ["volta_h884gemm", "k"]
    tc, k = rows
    assert (k.calls, k.total_us, k.mean_us, k.min_us, k.max_us) == (3, 60.0, 20.0, 10.0, 30.0)
    assert k.blocks_per_sm == pytest.approx(140 / 60)  # duration-weighted
    assert k.achieved_occupancy_pct == pytest.approx(1400 / 60)
    assert not k.tensor_cores
    assert (k.grid, k.block, k.registers, k.shared_mem) == ((4, 1, 1), (128, 1, 1), 32, 0)
    assert tc.tensor_cores
    assert (tc.calls, tc.total_us) == (1, 100.0)
    assert tc.blocks_per_sm == 0.0  # missing counted as 0 (tb Kernel view)
