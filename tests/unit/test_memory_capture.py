"""Memory and module views on a real CPU capture whose allocations and nesting the test
controls: the peak and the per-operator allocation sizes equal what the test allocated,
never-freed tensors are listed, and the module tree is the model's structure."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.analysis.suite import run_analyses

torch = pytest.importorskip("torch")

MIB = 1 << 20


class Inner(torch.nn.Module):  # type: ignore[misc, unused-ignore]
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x: Any) -> Any:
        return torch.relu(self.fc(x))


class Net(torch.nn.Module):  # type: ignore[misc, unused-ignore]
    def __init__(self) -> None:
        super().__init__()
        self.a = Inner()
        self.b = Inner()
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x: Any) -> Any:
        return self.head(self.b(self.a(x)))


CAPTURE = """
import sys, torch, stepscope
from tests.unit.test_memory_capture import Net, MIB
net = Net()
x = torch.randn(8, 16)
leak = []
with stepscope.profile(sys.argv[1], run="m", wait=0, warmup=1, active=2,
                       with_modules=True) as prof:
    for _ in range(3):
        leak.append(torch.empty(2 * MIB, dtype=torch.uint8))  # kept: never freed
        keep = torch.empty(1 * MIB, dtype=torch.uint8)
        tmp = torch.empty(3 * MIB, dtype=torch.uint8)
        del tmp
        net(x)
        del keep
        prof.step()
print(prof.last_trace)
"""


@pytest.fixture(scope="module")
def analyses(tmp_path_factory: pytest.TempPathFactory) -> Any:
    # A fresh interpreter: the CPU allocator's totals then hold only this workload's bytes
    # (earlier tests' threads and tensors would shift them).
    logdir = tmp_path_factory.mktemp("mem")
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root / "src"), str(root), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", CAPTURE, str(logdir)], capture_output=True,
                         text=True, env=env, cwd=root, check=True, timeout=300)
    trace = out.stdout.strip().splitlines()[-1]
    return run_analyses(stepscope.load(trace, cache=False))


def test_peak_equals_what_the_test_allocated(analyses: Any) -> None:
    cpu = analyses.memory.device("CPU")
    assert not cpu.cumulative
    # second recorded step: the first step's 2 MiB still held + 2 + 1 + 3 MiB
    assert cpu.peak_allocated == 8 * MIB
    steps = [s.name for s in analyses.steps.steps]
    assert cpu.peak_step == steps[-1]
    assert cpu.peak_operator == "aten::empty"


def test_per_operator_allocation_sizes(analyses: Any) -> None:
    cpu = analyses.memory.device("CPU")
    empty = next(r for r in cpu.operators if r.name == "aten::empty")
    big = [a.size for a in cpu.largest if a.size >= MIB]
    assert sorted(big) == [MIB, MIB, 2 * MIB, 2 * MIB, 3 * MIB, 3 * MIB]
    assert empty.self_allocation_size >= 12 * MIB  # 2 steps x (2 + 1 + 3) MiB
    assert empty.self_allocation_size - 12 * MIB < 4096  # plus at most a few tiny ones
    by_size = {a.size: a for a in cpu.largest}
    assert by_size[3 * MIB].operator == "aten::empty"
    assert by_size[3 * MIB].lifetime_ns is not None and by_size[3 * MIB].lifetime_ns > 0
    leaks = [a.size for a in cpu.unfreed if a.size >= MIB]
    assert leaks == [2 * MIB, 2 * MIB]
    assert all(a.free_ns is None for a in cpu.unfreed)


def test_module_tree_is_the_model_structure(analyses: Any) -> None:
    mods = analyses.modules
    paths = {n.path: n for n in mods.nodes}
    assert set(paths) == {"Net_0", "Net_0/Inner_0", "Net_0/Inner_0/Linear_0",
                          "Net_0/Inner_1", "Net_0/Inner_1/Linear_1", "Net_0/Linear_2"}
    assert all(n.calls == 2 for n in mods.nodes)
    root = paths["Net_0"]
    assert root.parent == -1 and root.depth == 0
    assert paths["Net_0/Inner_1/Linear_1"].parent == paths["Net_0/Inner_1"].id
    kids = [n for n in mods.nodes if n.parent == root.id]
    assert root.host_self_ns == pytest.approx(root.host_total_ns - sum(
        k.host_total_ns for k in kids))
    assert paths["Net_0/Inner_0/Linear_0"].operators[0].name == "aten::linear"
    assert {o.name for o in paths["Net_0/Inner_0"].operators} >= {"aten::relu"}
    assert [n.path for n in mods.nodes][:3] == ["Net_0", "Net_0/Inner_0",
                                                 "Net_0/Inner_0/Linear_0"]


def test_report_json_has_memory_and_modules(analyses: Any) -> None:
    from stepscope.report.build import Report

    data = Report(analyses=analyses, top=5).to_json()
    cpu = data["memory"]["devices"][0]
    assert cpu["device"] == "CPU" and cpu["peak_allocated_bytes"] == 8 * MIB
    assert max(cpu["curve"]["allocated_bytes"]) == 8 * MIB
    assert len(cpu["curve"]["t_us"]) == len(cpu["curve"]["allocated_bytes"])
    assert cpu["allocations"]["unfreed"][0]["size_bytes"] == 2 * MIB
    assert len(cpu["operators"]) <= 5
    assert data["modules"]["nodes"][0]["path"] == "Net_0"


def test_capture_can_write_the_memory_timeline(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from stepscope.analysis.memory.timeline import category_timeline
    from stepscope.formats.memory.timeline import read_memory_timeline

    net = Net()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    with stepscope.profile(str(tmp_path), run="t", wait=0, warmup=0, active=1,
                           memory=True) as prof:
        net(torch.randn(8, 16)).sum().backward()
        opt.step()
        prof.step()
    assert prof.last_trace is not None
    timeline = prof.memory_timelines[-1]
    assert timeline.endswith(".memory.raw.json.gz") and Path(timeline).exists()
    c = category_timeline(read_memory_timeline(timeline))
    params = sum(p.numel() * 4 for p in net.parameters())
    assert c.max_by_category["parameter"] == params
    assert c.max_by_category["gradient"] == params
    # stepscope report finds the timeline beside the trace
    from stepscope.cli.main import main

    assert main(["report", prof.last_trace, "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["memory"]["categories"]["max_bytes_by_category"]["parameter"] == params
    assert main(["report", prof.last_trace]) == 0
    assert "by category (memory timeline)" in capsys.readouterr().out
