"""Synthetic training traces for the diff tests: GPU-bound steps of two kernels."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.builders import TraceBuilder

MM_US = 400.0
RELU_US = 100.0


def training_trace(
    directory: Path, name: str, *, seed: int, steps: int = 8, mm_scale: float = 1.0,
    jitter: float = 0.02, rank: int | None = None, world_size: int = 2,
) -> Path:
    """``steps`` ProfilerSteps: aten::mm -> sgemm_kernel, aten::relu -> relu_kernel.

    Each step's host part takes 60 µs; the kernels run back to back after it, so the step
    time is ~ host + sgemm + relu and a slower sgemm shows 1:1 in the step time.
    ``mm_scale`` multiplies sgemm's duration (the injected slowdown).
    """
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    if rank is not None:
        b.distributed = {"backend": "nccl", "rank": rank, "world_size": world_size}
    t = 1000.0
    for i in range(steps):
        mm = MM_US * mm_scale * float(rng.normal(1.0, jitter))
        relu = RELU_US * float(rng.normal(1.0, jitter))
        with b.step(i + 1, t, 60):
            op = b.op("aten::mm", t + 5, 20, input_dims=[[64, 64], [64, 64]])
            b.launch(op, "cudaLaunchKernel", t + 8, 5, kernel="sgemm_kernel", k_ts=t + 62,
                     k_dur=mm)
            op2 = b.op("aten::relu", t + 30, 20, input_dims=[[64, 64]])
            b.launch(op2, "cudaLaunchKernel", t + 35, 5, kernel="relu_kernel",
                     k_ts=t + 63 + mm, k_dur=relu)
        t += 63 + mm + relu + 5
    return b.write(directory, name)


ADD_US = 200.0
MUL_US = 100.0


def cpu_training_trace(
    directory: Path, name: str, *, seed: int, steps: int = 8, add_scale: float = 1.0,
    jitter: float = 0.02,
) -> Path:
    """``steps`` CPU-only ProfilerSteps of one aten::add and one aten::mul call each.

    No kernels: the operators are compared by host time. ``add_scale`` multiplies aten::add's
    duration in every step (the injected slowdown); aten::mul only has its ``jitter``.
    """
    rng = np.random.default_rng(seed)
    b = TraceBuilder()
    t = 1000.0
    for i in range(steps):
        add = ADD_US * add_scale * float(rng.normal(1.0, jitter))
        mul = MUL_US * float(rng.normal(1.0, jitter))
        with b.step(i + 1, t, add + mul + 20):
            b.op("aten::add", t + 5, add, input_dims=[[64, 64], [64, 64]])
            b.op("aten::mul", t + 10 + add, mul, input_dims=[[64, 64], [64, 64]])
        t += add + mul + 30
    return b.write(directory, name)
