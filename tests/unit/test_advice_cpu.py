"""Advisor rules on small CPU captures made with torch.profiler."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import stepscope
from stepscope.advice import advise
from stepscope.analysis.suite import run_analyses

torch = pytest.importorskip("torch")


def capture(tmp_path: Path, body: Callable[[], object], steps: int = 4) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as prof:
        for _ in range(steps):
            body()
    path = tmp_path / "cpu.pt.trace.json"
    prof.export_chrome_trace(str(path))
    fs = advise(run_analyses(stepscope.load(str(path), cache=False)))
    return [f.id for f in fs]


def fires(tmp_path: Path, body: Callable[[], object], rule: str, attempts: int = 3) -> bool:
    """Whether ``rule`` fires on a capture of ``body``, captured again (up to ``attempts``
    times) when it does not: an operator the OS deschedules on a loaded machine holds the
    time slice in its CPU self time, which can outweigh the workload for one capture. The
    rules judge the workload; the shares of one capture are not deterministic."""
    for i in range(attempts):
        (tmp_path / str(i)).mkdir()
        if rule in capture(tmp_path / str(i), body):
            return True
    return False


def test_pointwise_heavy_cpu_loop(tmp_path: Path) -> None:
    x = torch.randn(256, 256)

    # 200 multiplies per step: the pointwise work must outweigh one operator that the OS
    # deschedules for a time slice on a loaded machine (with 20, a preempted copy operator
    # once held 79 % of the operators' CPU self time and the copies rule fired instead)
    def body() -> object:
        y = x
        for _ in range(200):
            y = y * 1.0001
        return y

    assert fires(tmp_path, body, "elementwise-dominated")


def test_copy_heavy_cpu_loop(tmp_path: Path) -> None:
    x = torch.randn(64, 128, 32)

    def body() -> object:
        return [x.permute(2, 0, 1).contiguous() for _ in range(10)] + [x.repeat(2, 1, 1)]

    assert fires(tmp_path, body, "materialising-copies")


def test_matmul_cpu_loop_is_silent(tmp_path: Path) -> None:
    a, b = torch.randn(256, 256), torch.randn(256, 256)

    def body() -> object:
        return [a @ b for _ in range(10)]

    found = capture(tmp_path, body)
    assert "elementwise-dominated" not in found and "materialising-copies" not in found
