"""Real multi-rank traces: DDP on CPU with gloo, one rank made slow on purpose."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import ROOT

from stepscope.analysis.distributed.rank import rank_summary
from stepscope.formats import load_trace
from stepscope.report.run import build_run_report, find_run

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

SLOW = 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def ddp_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ddp")
    proc = subprocess.run(
        [sys.executable, "-m", "tests.ddp_capture", str(out), str(_free_port()), "2", str(SLOW)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    if proc.returncode != 0:
        pytest.fail(f"DDP capture failed: {proc.stderr[-2000:]}")
    return out


def test_straggler_found(ddp_run: Path) -> None:
    rep = build_run_report(find_run([str(ddp_run)]), executor="serial")
    d = rep.distributed
    assert d.world_size == 2 and d.backend == "gloo" and d.rank_source == "distributedInfo"
    assert d.stragglers[0].rank == SLOW
    assert d.stragglers[0].share_pct > 60
    assert d.stragglers[0].computation_excess_ns > 0  # the extra matmuls are computation
    assert d.imbalance.slowest_rank == SLOW
    # the extra work is matmuls and tanh: they lead the straggler's slower operators
    slower = [name for name, _ in d.stragglers[0].slower_ops]
    assert slower and set(slower[:2]) <= {"aten::mm", "aten::matmul", "aten::tanh", "aten::mul"}
    assert "aten::" in rep.findings[0].evidence[-1]
    assert rep.findings and rep.findings[0].id == "straggler"
    assert f"Rank {SLOW}" in rep.findings[0].title
    waits = {r.rank: r.sync_ns for r in d.ranks}
    assert waits[1 - SLOW] > waits[SLOW]
    # gloo writes no process group nor Seq: matched by order, one unnamed group
    assert d.matched_by == "order" and d.pipeline is None
    (group,) = d.groups
    assert group.pg == "" and group.ranks == (0, 1)
    assert {c.name for c in group.calls} >= {"allreduce"}
    assert group.wait_ns[1 - SLOW] > group.wait_ns[SLOW]
    assert "pipeline-bubble" not in [f.id for f in rep.findings]


def test_allreduce_bytes_equal_gradient_bytes(ddp_run: Path) -> None:
    grad = int((ddp_run / "grad_bytes.txt").read_text())
    assert grad == (64 * 128 + 128 + 128 * 10 + 10) * 4
    for path in sorted(ddp_run.glob("rank*.json")):
        s = rank_summary(load_trace(str(path)))
        per_step: dict[str, int] = {}
        for c in s.calls:
            if c.collective == "allreduce":
                per_step[c.step] = per_step.get(c.step, 0) + c.nbytes
        assert per_step and all(v == grad for v in per_step.values()), per_step
    rep = build_run_report(find_run([str(ddp_run)]), executor="serial")
    (allreduce,) = [c for c in rep.distributed.collectives if c.collective == "allreduce"]
    assert allreduce.bytes_per_call == grad and allreduce.dtype == "float"
