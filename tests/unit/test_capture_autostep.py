"""AutoProfiler (the engine of `stepscope run`), in process: step and window modes."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture.autostep import AutoConfig, AutoProfiler

torch = pytest.importorskip("torch")


def _optimizer_hooks() -> dict[int, Any]:
    import torch.optim.optimizer as optimizer_module

    hooks: dict[int, Any] = optimizer_module._global_optimizer_post_hooks
    return hooks


def _host_ranges(path: str, prefix: str) -> list[tuple[str, int, int]]:
    trace = stepscope.load(path, cache=False)
    h = trace.host
    return sorted((trace.name(int(h.name[i])), int(h.ts[i]), int(h.ts[i] + h.dur[i]))
                  for i in range(len(h)) if trace.name(int(h.name[i])).startswith(prefix))


def _auto(tmp_path: Path, **kwargs: float) -> AutoProfiler:
    auto = AutoProfiler(AutoConfig(logdir=str(tmp_path), run="r", **kwargs))  # type: ignore[arg-type]
    auto.install()
    return auto


def _train(steps: int, optimizers: int = 1) -> None:
    model = torch.nn.Linear(16, 4)
    opts = [torch.optim.SGD(model.parameters(), lr=0.01) for _ in range(optimizers)]
    for _ in range(steps):
        model(torch.randn(8, 16)).sum().backward()
        for opt in opts:
            opt.step()
            opt.zero_grad()


def test_optimizer_steps_are_profiler_steps(tmp_path: Path) -> None:
    auto = _auto(tmp_path, wait=1, warmup=1, active=2)
    _train(10, optimizers=2)  # the second optimizer does not add steps
    outcome = auto.finish()
    assert outcome.mode == "steps" and len(outcome.traces) == 1
    steps = _host_ranges(outcome.traces[0], "ProfilerStep#")
    assert [name for name, _, _ in steps] == ["ProfilerStep#2", "ProfilerStep#3"]
    # each step holds exactly one whole Optimizer.step range of the followed optimizer
    opt_ranges = _host_ranges(outcome.traces[0], "Optimizer.step#")
    for _, start, end in steps:
        inside = [r for r in opt_ranges if start <= r[1] and r[2] <= end]
        crossing = [r for r in opt_ranges if r[1] < end < r[2] or r[1] < start < r[2]]
        assert len(inside) == 2 and not crossing  # two optimizers step inside each step
    # the schedule finished: hooks are gone and the optimizer has its own step again
    assert auto.mode.value == "done"
    assert not _optimizer_hooks()
    from torch.nn.modules import module as module_module

    assert not module_module._global_forward_pre_hooks
    assert not module_module._global_forward_hooks


def test_inference_records_a_time_window(tmp_path: Path) -> None:
    auto = _auto(tmp_path, wait=1, warmup=1, window_s=0.2)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU())
    x = torch.randn(64, 512)
    # Call until the window has closed, then a few more: what is recorded is then a
    # deterministic part of the calls made, however fast or loaded the machine is (the
    # deadline only keeps a regression from hanging the suite).
    calls, after, deadline = 0, 0, time.monotonic() + 120
    with torch.no_grad():
        while after < 3:
            assert time.monotonic() < deadline, auto.mode
            model(x)
            calls += 1
            after += auto.mode.value == "done"
    outcome = auto.finish()
    assert outcome.mode == "window" and len(outcome.traces) == 1
    trace = stepscope.load(outcome.traces[0], cache=False)
    addmm = trace.strings.index("aten::addmm")
    recorded = int((trace.host.name == addmm).sum())
    # not the wait + warm-up calls, nor the call that closed the window and those after it
    assert 1 <= recorded <= calls - (1 + 1) - 3
    # nested module calls are not counted as separate calls
    assert outcome.module_calls > 2


def test_optimizer_after_a_window_replaces_it(tmp_path: Path) -> None:
    auto = _auto(tmp_path, wait=0, warmup=1, active=1, window_s=60)
    model = torch.nn.Linear(8, 8)
    with torch.no_grad():
        for _ in range(3):  # an evaluation pass first: starts the provisional window
            model(torch.randn(2, 8))
    assert auto.mode.value == "window"
    _train(6)
    outcome = auto.finish()
    assert outcome.mode == "steps" and len(outcome.traces) == 1
    assert [n for n, _, _ in _host_ranges(outcome.traces[0], "ProfilerStep#")] == [
        "ProfilerStep#1"]
    assert len(list((tmp_path / "r").iterdir())) == 1  # the window was not written


def test_nothing_to_profile(tmp_path: Path) -> None:
    auto = _auto(tmp_path)
    torch.randn(3).sum()
    outcome = auto.finish()
    assert outcome.traces == [] and "nothing was profiled" in outcome.note
    assert not _optimizer_hooks()


def test_program_ends_mid_schedule(tmp_path: Path) -> None:
    auto = _auto(tmp_path, wait=0, warmup=1, active=5)
    _train(4)  # profiler starts after step 1, records steps 1.. until the end
    outcome = auto.finish()
    assert len(outcome.traces) == 1
    assert _host_ranges(outcome.traces[0], "ProfilerStep#")[0][0] == "ProfilerStep#1"


def test_program_with_its_own_profiler(tmp_path: Path) -> None:
    from torch.profiler import ProfilerActivity, profile

    auto = _auto(tmp_path)
    with profile(activities=[ProfilerActivity.CPU]):
        _train(4)
    outcome = auto.finish()
    assert outcome.traces == [] and "its own torch profiler" in outcome.note


@pytest.mark.parametrize("active", [2, 50])  # the trace is written by a step / by finish()
def test_trace_cannot_be_written(tmp_path: Path, active: int) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    auto = AutoProfiler(AutoConfig(logdir=str(blocker), run="r", wait=0, warmup=1,
                                   active=active))
    auto.install()
    _train(6)  # the program runs on: no exception from inside its optimizer step
    outcome = auto.finish()
    assert outcome.traces == []
    assert outcome.note.startswith("cannot write the trace: ") and "\n" not in outcome.note
    assert not _optimizer_hooks()
