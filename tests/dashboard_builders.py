"""Synthetic traces for the dashboard tests: nested ops, launches, hostile names."""

from __future__ import annotations

from pathlib import Path

from tests.builders import TraceBuilder

EVIL_OP = "<script>alert(1)</script>"
EVIL_KERNEL = 'void k<float, "q">(T&) </script><img src=x onerror=alert(2)>'


def dashboard_trace(directory: Path, name: str = "worker0.1.pt.trace.json.gz",
                    steps: int = 3, step_us: float = 1000.0) -> Path:
    """``steps`` ProfilerSteps of ``step_us``; each: an op with a child launching two kernels
    (the same ones, under 400 µs, whatever the step's length)."""
    b = TraceBuilder()
    for n in range(steps):
        t = step_us * n
        with b.step(n, t, step_us):
            outer = b.op(EVIL_OP, t + 10, 400, stack="train.py(42): step;model.py(7): forward")
            inner = b.op("aten::mm", t + 20, 200, input_dims=[[64, 64], [64, 64]])
            b.launch(inner, "cudaLaunchKernel", t + 30, 10, kernel=EVIL_KERNEL,
                     k_ts=t + 50, k_dur=300, grid=[4, 1, 1], block=[128, 1, 1])
            b.launch(outer, "cudaLaunchKernel", t + 300, 5, kernel="ampere_sgemm_64x64_nn",
                     k_ts=t + 360, k_dur=1.5)
    return b.write(directory, name)
