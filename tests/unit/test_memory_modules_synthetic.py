"""Memory and module views on synthetic traces with exact times, addresses and kernels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.builders import PID, TID, TraceBuilder

from stepscope.analysis.suite import run_analyses


def _mem(b: TraceBuilder, ts: float, nbytes: int, addr: int, total: int, reserved: int,
         device_type: int = 1) -> None:
    b.events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": PID,
                     "tid": TID, "ts": ts, "s": "t",
                     "args": {"Device Type": device_type, "Device Id": 0, "Bytes": nbytes,
                              "Addr": addr, "Total Allocated": total,
                              "Total Reserved": reserved}})


def _module(b: TraceBuilder, name: str, ts: float, dur: float) -> dict[str, Any]:
    return b._complete("python_function", f"nn.Module: {name}", PID, TID, ts, dur,
                       {"Python id": len(b.events), "Python module id": 0})


def test_allocations_matched_by_address(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        b.op("aten::empty", 10, 5)
        b.op("aten::mm", 20, 10)
    with b.step(2, 100, 100):
        b.op("aten::empty", 110, 5)
    _mem(b, 11, 1000, 0xA, 1000, 4096)     # aten::empty, freed at 50
    _mem(b, 21, 3000, 0xB, 4000, 4096)     # aten::mm, never freed -> possible leak
    _mem(b, 50, -1000, 0xA, 3000, 4096)
    _mem(b, 60, -500, 0xC, 2500, 4096)     # allocated before the trace
    _mem(b, 111, 2000, 0xA, 4500, 8192)    # address reused in step 2, never freed
    m = run_analyses(b.load(tmp_path)).memory
    assert m is not None
    (gpu,) = m.devices
    assert gpu.device == "GPU0" and not gpu.cumulative
    assert (gpu.peak_allocated, gpu.peak_step, gpu.peak_operator) == (4500, "2", "aten::empty")
    assert gpu.peak_ns - m.origin_ns == 111_000 and gpu.peak_reserved == 8192
    assert (gpu.allocations, gpu.frees, gpu.matched) == (3, 2, 1)
    assert (gpu.unfreed_count, gpu.unfreed_bytes, gpu.frees_without_alloc) == (2, 5000, 1)
    first = next(a for a in gpu.largest if a.size == 1000)
    assert first.lifetime_ns == 39_000 and first.operator == "aten::empty" and first.step == "1"
    assert [(a.size, a.operator, a.step) for a in gpu.unfreed] == [
        (3000, "aten::mm", "1"), (2000, "aten::empty", "2")]
    assert gpu.step_start_allocated == (("1", 0), ("2", 2500))
    rows = {r.name: r for r in gpu.operators}
    assert rows["aten::empty"].self_allocation_size == 3000
    assert rows["aten::empty"].self_size_increase == 3000
    assert rows["aten::mm"].allocation_count == 1
    assert (gpu.t_ns - m.origin_ns).tolist() == [11_000, 21_000, 50_000, 60_000, 111_000]


def test_module_device_times_sum_to_their_kernels(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 1000):
        _module(b, "Net_0", 10, 500)
        _module(b, "Block_0", 20, 200)
        _module(b, "Linear_0", 30, 100)
        mm = b.op("aten::linear", 40, 50)
        b.launch(mm, "cudaLaunchKernel", 45, 5, kernel="gemm", k_ts=100, k_dur=70)
        relu = b.op("aten::relu", 150, 20)
        b.launch(relu, "cudaLaunchKernel", 155, 5, kernel="relu_k", k_ts=200, k_dur=10)
        _module(b, "Block_1", 300, 150)
        add = b.op("aten::add", 310, 20)
        b.launch(add, "cudaLaunchKernel", 315, 5, kernel="add_k", k_ts=400, k_dur=30)
        outside = b.op("aten::sum", 600, 20)  # after the model: no module
        b.launch(outside, "cudaLaunchKernel", 605, 5, kernel="sum_k", k_ts=700, k_dur=40)
    mods = run_analyses(b.load(tmp_path)).modules
    assert mods is not None
    by = {n.path: n for n in mods.nodes}
    assert list(by) == ["Net_0", "Net_0/Block_0", "Net_0/Block_0/Linear_0", "Net_0/Block_1"]
    us = {p: (n.device_self_ns / 1000, n.device_total_ns / 1000) for p, n in by.items()}
    assert us == {"Net_0": (0, 110), "Net_0/Block_0": (10, 80),
                  "Net_0/Block_0/Linear_0": (70, 70), "Net_0/Block_1": (30, 30)}
    assert mods.device_ns_in_modules == 110_000 and mods.device_ns_total == 150_000
    assert by["Net_0"].host_self_ns == (500 - 200 - 150) * 1000
    assert [k.name for k in by["Net_0/Block_0"].kernels] == ["relu_k"]
    assert [o.name for o in by["Net_0/Block_0/Linear_0"].operators] == ["aten::linear"]
    assert by["Net_0/Block_1"].parent == by["Net_0"].id


def test_repeated_module_calls_aggregate_by_path(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(3):
        with b.step(i, i * 100, 100):
            _module(b, "Net_0", i * 100 + 10, 50)
            _module(b, "Linear_0", i * 100 + 20, 10 + i)
    mods = run_analyses(b.load(tmp_path)).modules
    assert mods is not None
    lin = next(n for n in mods.nodes if n.path == "Net_0/Linear_0")
    assert lin.calls == 3 and lin.host_total_ns == pytest.approx(33_000)
    assert lin.max_call_ns == 12_000
