"""The dependency graph of a run of ranks (analysis/graph/ranks.py, report/crossrank.py):
collectives joined across ranks, the run's critical path, what-if on a folder. Real CPU gloo
captures (tests/data) and a synthetic NCCL run (tests/distributed_builders.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import ROOT
from tests.distributed_builders import write_run

from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.hostcomm import wire
from stepscope.analysis.graph.ranks import RunGraph
from stepscope.analysis.graph.transforms import parse
from stepscope.cli.main import main
from stepscope.parallel.executor import map_ranks
from stepscope.parallel.tasks import RankFailure, RankTask, summarise_rank
from stepscope.report.crossrank import run_graph
from stepscope.report.run import build_run_report, find_run, ranked_paths

DIST = ROOT / "tests" / "data" / "distributed"
DDP = ROOT / "tests" / "data" / "whatif" / "runs" / "ddp-0_01"


def _graph(folder: Path) -> RunGraph:
    run = find_run([str(folder)])
    tasks = [RankTask(p, False) for p in run.paths]
    res = map_ranks(summarise_rank, tasks, executor="serial")
    ok = [(t.path, r) for t, r in zip(tasks, res, strict=True) if not isinstance(r, RankFailure)]
    ranked, paths, _ = ranked_paths(ok)
    built = run_graph(paths, ranked, use_cache=False)
    assert built.graph is not None, built.note
    return built.graph


@pytest.fixture(scope="module")
def skew() -> RunGraph:
    return _graph(DIST / "moe_skew")


@pytest.fixture(scope="module")
def ddp() -> RunGraph:
    return _graph(DDP)


def _joint_holds(g: RunGraph, t: np.ndarray) -> None:
    """Every member's collective ends no earlier than the last arrival plus the transfer,
    and the joint event starts at the last arrival."""
    c_idx, _ = g.joint_members
    ev = g.member_event
    last = np.full(g.joined_calls, np.iinfo(np.int64).min)
    np.maximum.at(last, c_idx, t[2 * ev])
    assert (t[2 * ev + 1] >= last[c_idx] + g.joint_transfer[c_idx]).all()
    v = int(g.eoff[-1]) + np.arange(g.joined_calls)
    assert np.array_equal(t[2 * v], last)


def test_moe_skew_path_runs_through_the_slow_rank(skew: RunGraph) -> None:
    """Rank 3 receives 4x the tokens and runs the expert on them (tests/data/distributed/
    README.md): the run's path runs through it, and the others wait on it."""
    p = skew.critical_path()
    assert skew.joined_calls == 6  # 3 steps x (dispatch + combine)
    assert p.runs_through_rank == 3 and p.end_rank == 3
    assert p.by_rank_ns[3] > 0.7 * p.length_ns
    assert p.length_ns == 39_646_811  # per step, rank 3's 3 steps
    assert p.timing.step_ns == 39_790_372 and p.timing.slowest_rank == 0
    assert [e.rank for e in p.events[:8]] == [3] * 8
    # one host: the wall clock is causal and kept
    assert set(p.clock_source.values()) <= {"reference", "wall clock"}
    assert set(p.clock_offsets_ns.values()) == {0}


def test_unmodified_run_replay_reproduces_the_trace(skew: RunGraph, ddp: RunGraph) -> None:
    for g in (skew, ddp):
        t = g.times()
        real = g.node_rank >= 0
        assert np.array_equal(t[real], g.ts[real])
        _joint_holds(g, t)


def test_no_collective_ends_before_the_last_arrival_after_a_fix(ddp: RunGraph,
                                                                skew: RunGraph) -> None:
    for g in (ddp, skew):
        for spec in ("overlap_comm", "drop_dataloader_wait", "scale_kernels:.=0.5"):
            _joint_holds(g, g.times((parse(spec),)))


def test_run_steps_equal_the_ranks_own_replays_on_ddp(ddp: RunGraph) -> None:
    """Each rank's replayed step in the run equals its single-trace replay where the
    collectives' ranges add nothing past the host's last event (DDP: the optimizer follows
    the last all-reduce)."""
    from stepscope.analysis.graph.whatif import Replayer

    before = ddp.before()
    for inp, r in zip(ddp.inputs, before.ranks, strict=True):
        one = Replayer(inp.trace, inp.links, inp.windows).before.step_ns
        assert abs(r.step_ns - one) <= 0.05 * one
    assert before.step_ns == max(r.step_ns for r in before.ranks)


def test_gloo_wait_edges_on_ddp(ddp: RunGraph) -> None:
    """gloo's work runs on its own thread; the training thread resumes right after it."""
    inp = ddp.inputs[0]
    g = ddp.graphs[0]
    sync = int(np.count_nonzero(g.xkind == K.SYNC))
    issue = int(np.count_nonzero(g.xkind == K.ISSUE))
    assert issue == 120  # every gloo work of the 5 steps (the trace holds 120)
    assert 0 < sync <= issue
    assert wire(g, np.empty(0, dtype=np.int64)) is g
    assert inp.trace.has_gpu is False


def test_whatif_on_a_folder(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(DDP), "--apply", "overlap_comm", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    b, a = doc["before"], doc["after"]
    assert b["step_us"] == max(r["step_us"] for r in b["ranks"])
    assert a["step_us"] == max(r["step_us"] for r in a["ranks"])
    assert [r["rank"] for r in b["ranks"]] == [0, 1]
    assert b["step_us"] == 38_414.071 and a["step_us"] == 31_961.061
    assert "run.json" in doc["note"]  # the folder's metadata file is skipped, and said so


def test_whatif_on_a_folder_refuses_a_window(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["whatif", str(DDP), "--apply", "overlap_comm", "--window", "x"]) == 2
    assert "--window" in capsys.readouterr().err


def test_run_report_json_and_text(capsys: pytest.CaptureFixture[str]) -> None:
    rep = build_run_report(find_run([str(DIST / "moe_skew")]), executor="serial",
                           use_cache=False)
    cp = rep.to_json()["critical_path"]
    assert cp["runs_through_rank"] == 3 and cp["end_rank"] == 3
    assert cp["length_us"] == 39_646.811
    assert all("rank" in e and "waited_on_rank" in e for e in cp["events"])
    assert cp["waits"] and all(w["waited_on_rank"] != w["rank"] for w in cp["waits"])
    assert main(["report", str(DIST / "moe_skew"), "--executor", "serial"]) == 0
    out = capsys.readouterr().out
    assert "Critical path across ranks" in out and "runs through rank 3" in out
    assert "the straggler" in out and cp["straggler"] == 3


def test_mixed_groups_are_not_joined() -> None:
    """tp_dp: gloo calls name no group and smaller groups split the ranks: matching by
    order would join TP and DP calls, so none is joined, and the report says why."""
    rep = build_run_report(find_run([str(DIST / "tp_dp")]), executor="serial", use_cache=False)
    cp = rep.to_json()["critical_path"]
    assert cp["joined_collectives"] == 0
    assert "not joined across ranks" in cp["note"]


def test_nccl_run_crosses_to_the_straggler(tmp_path: Path) -> None:
    """Synthetic NCCL run: rank 2 computes 3 ms, the others 1 ms; the all-reduce ends on
    every rank at rank 2's arrival + 1 ms. Clocks shifted per rank by more than a transfer
    (a rank would end the call before another started it) are realigned on the ends."""
    write_run(tmp_path, [1000.0, 1000.0, 3000.0, 1000.0], steps=2,
              offsets_us=[0.0, 2500.0, -4000.0, 1200.0])
    g = _graph(tmp_path)
    assert g.joined_calls == 2
    assert g.clock_source[1:] == ["collective ends"] * 3
    assert g.offsets.tolist() == [0, -2_500_000, 4_000_000, -1_200_000]
    p = g.critical_path()
    assert p.runs_through_rank == 2 and p.by_rank_ns[2] == 1_509_500 and p.length_ns == 4_255_000
    assert [(w.rank, w.waited_on_rank, w.wait_ns) for w in p.waits] == [(0, 2, 2_000_000)]
    joint = [e for e in p.events if e.event.kind == "collective"]
    assert [(e.rank, e.waited_on_rank, e.event.dur_ns) for e in joint] == [(0, 2, 1_000_000)]
    t = g.times()
    _joint_holds(g, t)
    real = g.node_rank >= 0
    assert np.array_equal(t[real], g.ts[real])


def test_a_run_over_the_event_cap_keeps_its_view_without_the_graph(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The coordinator reads events only up to crossrank.MAX_EVENTS: beyond it the run's
    report has no cross-rank path and says why in its note."""
    from stepscope.report import crossrank
    monkeypatch.setattr(crossrank, "MAX_EVENTS", 10)
    report = build_run_report(find_run([str(DIST / "moe_skew")]), executor="serial",
                              use_cache=False)
    assert report.critical_path is None
    assert "more than 10 events" in report.path_note
    assert report.distributed.world_size == 4  # the distributed view stands


def test_a_defect_in_the_run_graph_leaves_the_run_view_standing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cross-rank graph is an addition: an unexpected error in it becomes the path's
    note (as the advisor reports a failing rule), not a lost run report."""
    from stepscope.report import crossrank

    def broken(*_: object, **__: object) -> None:
        raise ValueError("bad shape")

    monkeypatch.setattr(crossrank, "run_graph", broken)
    report = build_run_report(find_run([str(DIST / "moe_skew")]), executor="serial",
                              use_cache=False)
    assert report.critical_path is None and report.distributed.world_size == 4
    assert report.path_note.startswith("the run's graph could not be built (ValueError: bad")
