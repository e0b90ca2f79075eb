"""Memory and module advisor rules: each fires on a trace built to trigger it and stays
silent on a healthy one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.builders import PID, TID, TraceBuilder

from stepscope.advice import advise
from stepscope.advice.rules.memory import capacity
from stepscope.analysis.suite import run_analyses

GIB = 1 << 30
CAP = 80 * GIB


def _mem(b: TraceBuilder, ts: float, nbytes: int, addr: int, total: int, reserved: int) -> None:
    b.events.append({"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": PID,
                     "tid": TID, "ts": ts, "s": "t",
                     "args": {"Device Type": 1, "Device Id": 0, "Bytes": nbytes, "Addr": addr,
                              "Total Allocated": total, "Total Reserved": reserved}})


def _findings(b: TraceBuilder, tmp_path: Path) -> dict[str, Any]:
    b.device_properties[0]["totalGlobalMem"] = CAP
    return {f.id: f for f in advise(run_analyses(b.load(tmp_path)))}


def _steps(b: TraceBuilder, n: int = 4, training: bool = False) -> None:
    for i in range(n):
        with b.step(i, i * 1000, 1000):
            op = b.op("aten::mm", i * 1000 + 10, 100)
            b.launch(op, "cudaLaunchKernel", i * 1000 + 20, 5, kernel="gemm",
                     k_ts=i * 1000 + 30, k_dur=800)
            if training:
                b.annotation("Optimizer.step#AdamW.step", i * 1000 + 900, 50)


def test_near_capacity_fires_and_names_the_peak(tmp_path: Path) -> None:
    b = TraceBuilder()
    _steps(b)
    _mem(b, 15, 70 * GIB, 1, 70 * GIB, 76 * GIB)
    _mem(b, 50, -70 * GIB, 1, 0, 76 * GIB)
    f = _findings(b, tmp_path)["memory-near-capacity"]
    assert f.severity == "medium" and f.saving_us == 0
    assert "87.5 %" in f.evidence[0] and "aten::mm" in f.evidence[0]
    assert "expandable_segments" in f.fix


def test_fragmentation_fires_when_reserved_far_exceeds_allocated(tmp_path: Path) -> None:
    b = TraceBuilder()
    _steps(b)
    _mem(b, 15, 2 * GIB, 1, 2 * GIB, 6 * GIB)
    _mem(b, 50, -2 * GIB, 1, 0, 6 * GIB)
    found = _findings(b, tmp_path)
    f = found["allocator-fragmentation"]
    assert "4.00 GiB" in f.title and "67 %" in f.title
    # the trace shows reserved above the allocated peak, not that it "cannot" be used
    assert "more than was ever allocated at once" in f.title and "cannot" not in f.title
    assert "memory-near-capacity" not in found


def test_growth_fires_on_tensors_kept_across_steps(tmp_path: Path) -> None:
    b = TraceBuilder()
    _steps(b)
    for i in range(4):
        _mem(b, i * 1000 + 15, 8 << 20, 100 + i, (i + 1) * (8 << 20), GIB)
    f = _findings(b, tmp_path)["memory-growth"]
    assert "8.0 MiB every step" in f.title
    assert "0.0 MiB → 8.0 MiB → 16.0 MiB → 24.0 MiB" in f.evidence[0]
    # inference (no backward, no optimizer): outputs kept on the GPU, not a loss
    assert "out.cpu()" in (f.code or "") and "loss" not in f.fix
    t = TraceBuilder()
    _steps(t, training=True)
    for i in range(4):
        _mem(t, i * 1000 + 15, 8 << 20, 100 + i, (i + 1) * (8 << 20), GIB)
    (tmp_path / "train").mkdir()
    g = _findings(t, tmp_path / "train")["memory-growth"]
    assert "loss.item()" in (g.code or "") and "loss.detach()" in g.fix
    assert "aten::mm" in f.evidence[2]


def test_dominant_module_fires_on_the_hot_sub_module(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(2):
        base = i * 1000
        with b.step(i, base, 1000):
            b._complete("python_function", "nn.Module: Net_0", PID, TID, base + 5, 900, {})
            b._complete("python_function", "nn.Module: Attention_0", PID, TID, base + 10, 300, {})
            op = b.op("aten::bmm", base + 20, 50)
            b.launch(op, "cudaLaunchKernel", base + 30, 5, kernel="bmm_k", k_ts=base + 40,
                     k_dur=600)
            b._complete("python_function", "nn.Module: Mlp_0", PID, TID, base + 400, 300, {})
            op2 = b.op("aten::mm", base + 410, 50)
            b.launch(op2, "cudaLaunchKernel", base + 420, 5, kernel="mm_k", k_ts=base + 650,
                     k_dur=100)
    f = _findings(b, tmp_path)["dominant-module"]
    assert f.title.startswith("Module Attention_0 takes 60 %")
    assert f.saving_us == 300.0
    assert "bmm_k" in f.evidence[1]


def test_memory_and_module_rules_silent_on_a_healthy_trace(tmp_path: Path) -> None:
    b = TraceBuilder()
    _steps(b)
    for i in range(4):  # same 1 GiB allocated and freed every step, reserved = allocated
        _mem(b, i * 1000 + 15, GIB, 7, GIB, GIB)
        _mem(b, i * 1000 + 60, -GIB, 7, 0, GIB)
    b._complete("python_function", "nn.Module: Net_0", PID, TID, 5, 100, {})
    found = _findings(b, tmp_path)
    for rule in ("memory-near-capacity", "allocator-fragmentation", "memory-growth",
                 "dominant-module"):
        assert rule not in found


def test_near_capacity_asks_for_no_mixed_precision_when_matmuls_are_bf16(tmp_path: Path) -> None:
    b = TraceBuilder()
    for i in range(4):
        with b.step(i, i * 1000, 1000):
            op = b.op("aten::mm", i * 1000 + 10, 100, input_dims=[[4096, 4096], [4096, 4096]],
                      input_types=["c10::BFloat16", "c10::BFloat16"])
            b.launch(op, "cudaLaunchKernel", i * 1000 + 20, 5,
                     kernel="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
                     k_ts=i * 1000 + 30, k_dur=800)
            b.annotation("Optimizer.step#AdamW.step", i * 1000 + 900, 50)  # training
    _mem(b, 15, 70 * GIB, 1, 70 * GIB, 76 * GIB)
    _mem(b, 50, -70 * GIB, 1, 0, 76 * GIB)
    f = _findings(b, tmp_path)["memory-near-capacity"]
    assert "autocast" not in f.fix and "Mixed precision" not in f.estimate
    assert f.code == capacity.CODE_CHECKPOINT


def test_near_capacity_of_inference_speaks_of_weights_not_activations(tmp_path: Path) -> None:
    """Inference (aten operators, no backward, no optimizer) keeps no activations for a
    backward pass: no checkpointing, gradient accumulation or optimizer sharding."""
    b = TraceBuilder()
    _steps(b)
    _mem(b, 15, 70 * GIB, 1, 70 * GIB, 76 * GIB)
    _mem(b, 50, -70 * GIB, 1, 0, 76 * GIB)
    f = _findings(b, tmp_path)["memory-near-capacity"]
    assert "torch.inference_mode()" in f.fix and "bf16/fp16" in f.fix
    for word in ("checkpoint", "accumulation", "optimizer", "FSDP"):
        assert word not in f.fix and word not in (f.code or "")
    assert f.code == capacity.CODE_INFERENCE
    assert f.evidence[-1] == "no backward pass or optimizer step in the trace: inference"


def test_near_capacity_is_silent_for_vllm(tmp_path: Path) -> None:
    """vLLM reserves gpu_memory_utilization of the GPU for weights and KV cache at start
    and fits its batches into it: a full GPU is its design, not a risk."""
    b = TraceBuilder()
    for i in range(4):
        with b.step(i, i * 1000, 1000):
            op = b.op("vllm::unified_attention_with_output", i * 1000 + 10, 100)
            b.launch(op, "cudaLaunchKernel", i * 1000 + 20, 5, kernel="gemm",
                     k_ts=i * 1000 + 30, k_dur=800)
    _mem(b, 15, 70 * GIB, 1, 70 * GIB, 76 * GIB)
    _mem(b, 50, -70 * GIB, 1, 0, 76 * GIB)
    assert "memory-near-capacity" not in _findings(b, tmp_path)
