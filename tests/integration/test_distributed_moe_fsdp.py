"""Real CPU gloo captures (tests/data/distributed): MoE all-to-all, FSDP2, TP+DP."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.conftest import ROOT

from stepscope.cli.main import main
from stepscope.report.run import RunReport, build_run_report, find_run

DATA = ROOT / "tests" / "data" / "distributed"
KIB = 1024  # a token row: 256 float32
STEPS = 3


def _report(name: str) -> RunReport:
    return build_run_report(find_run([str(DATA / name)]), executor="serial", use_cache=False)


@pytest.fixture(scope="module")
def skew() -> RunReport:
    return _report("moe_skew")


@pytest.fixture(scope="module")
def balanced() -> RunReport:
    return _report("moe_balanced")


@pytest.fixture(scope="module")
def fsdp() -> RunReport:
    return _report("fsdp")


def test_skewed_matrix_equals_split_sizes_times_row_bytes(skew: RunReport) -> None:
    a = skew.distributed.all_to_all
    assert a is not None and a.ranks == (0, 1, 2, 3) and a.calls == 2 * STEPS
    # dispatch: 64 rows to ranks 0-2 and 256 to rank 3; combine sends back what came in
    expected = np.zeros((4, 4), dtype=np.int64)
    for i in range(4):
        for j in range(4):
            dispatch = 256 if j == 3 else 64
            combine = 256 if i == 3 else 64
            expected[i, j] = STEPS * (dispatch + combine) * KIB
    assert a.matrix.tolist() == expected.tolist()
    assert a.sent.tolist() == expected.sum(axis=1).tolist()
    assert a.received.tolist() == expected.sum(axis=0).tolist()
    assert a.imbalance == pytest.approx(expected[:, 3].sum() / expected.sum(axis=0).mean())
    assert a.hot_ranks == (3,) and a.unmapped == 0


def test_each_rank_received_what_the_others_sent(skew: RunReport) -> None:
    # rank 0's own output splits agree with the column the other ranks' input splits make
    a = skew.distributed.all_to_all
    assert a is not None
    assert a.received[0] == STEPS * (3 * (64 + 64) + (64 + 256)) * KIB


def test_expert_imbalance_fires_and_replaces_straggler_advice(skew: RunReport) -> None:
    ids = [f.id for f in skew.findings]
    assert "expert-imbalance" in ids
    assert not {"straggler", "rank-imbalance", "low-comm-overlap"} & set(ids)
    f = next(f for f in skew.findings if f.id == "expert-imbalance")
    assert "rank 3" in f.title and "1.64x" in f.title
    for fix in ("load-balancing", "capacity factor", "token-dropping", "replicate"):
        assert fix in f.fix
    assert not any("sharding" in f.fix for f in skew.findings)


def test_balanced_matrix_and_silence(balanced: RunReport) -> None:
    a = balanced.distributed.all_to_all
    assert a is not None
    assert a.matrix.tolist() == [[STEPS * 128 * KIB] * 4] * 4
    assert a.imbalance == pytest.approx(1.0) and a.hot_ranks == ()
    assert "expert-imbalance" not in [f.id for f in balanced.findings]


def test_json_all_to_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(DATA / "moe_skew"), "--format", "json", "--no-cache"]) == 0
    a = json.loads(capsys.readouterr().out)["distributed"]["all_to_all"]
    assert a["hot_ranks"] == [3] and a["calls"] == 6 and a["imbalance"] == pytest.approx(1.643)
    assert sum(map(sum, a["matrix_bytes"])) == sum(a["sent_bytes"]) == sum(a["received_bytes"])
    assert a["matrix_bytes"][0][3] == STEPS * 320 * KIB


def test_fsdp_units_and_overlap(fsdp: RunReport) -> None:
    f = fsdp.distributed.fsdp
    assert f is not None and f.version == "FSDP2" and f.ranks == 4
    ag = [u for u in f.units if u.kind == "all_gather"]
    rs = [u for u in f.units if u.kind == "reduce_scatter"]
    assert [u.unit for u in ag] == [str(k) for k in range(8)]
    assert sorted(u.unit for u in rs) == [str(k) for k in range(8)]
    # each step all-gathers every unit twice (forward, backward), reduce-scatters once;
    # a unit's shard: (512 x 512 + 512) / 4 ranks float32
    assert all(u.calls == 2 * STEPS and u.nbytes == 2 * STEPS * 65664 * 4 for u in ag)
    assert all(u.calls == STEPS for u in rs)
    for u in f.units:
        assert 0 <= u.exposed_ns <= u.time_ns
    pct = f.overlap_pct("all_gather")
    assert pct is not None and 0.0 <= pct < 50.0  # CPU: the units wait for their all-gathers
    assert pct == pytest.approx(100 * (1 - f.total("all_gather", "exposed_ns")
                                       / f.total("all_gather", "time_ns")))


def test_fsdp_finding_fires_with_prefetch_advice(fsdp: RunReport) -> None:
    f = next(f for f in fsdp.findings if f.id == "fsdp-exposed-all-gather")
    assert "set_modules_to_forward_prefetch" in f.fix and f.code is not None
    # CPU gloo: the all-gathers take longer than all the computation they could hide under
    d = fsdp.distributed.fsdp
    assert d is not None and 0 < d.computation_ns < d.total("all_gather", "exposed_ns")
    assert f.fix.startswith("Communication-bound") and "reshard_after_forward=False" in f.fix
    assert "low-comm-overlap" not in [x.id for x in fsdp.findings]


def test_no_fsdp_no_all_to_all_on_tp_dp() -> None:
    rep = _report("tp_dp")
    assert rep.distributed.fsdp is None and rep.distributed.all_to_all is None
    assert not {"fsdp-exposed-all-gather", "expert-imbalance"} & {f.id for f in rep.findings}
    assert rep.to_json()["distributed"]["fsdp"] is None


def test_gloo_subgroups_matched_by_order_are_flagged() -> None:
    """gloo names no process group on its calls: in the TP x DP capture the TP groups {0,1},
    {2,3} and the DP groups {0,2}, {1,3} issue identical call sequences, so order matching
    pairs calls over all four ranks; the report must say so, not present them as one group."""
    tp_dp = _report("tp_dp").distributed
    assert tp_dp.matched_by == "order"
    assert [g.ranks for g in tp_dp.groups] == [(0, 1, 2, 3)]
    note = tp_dp.matching_note
    assert "{0,1}" in note and "{2,3}" in note and "{0,2}" in note and "{1,3}" in note
    assert "ranks 0-3" in note


@pytest.mark.parametrize("name", ["moe_skew", "fsdp"])
def test_no_mixed_groups_note_without_subgroups(name: str) -> None:
    assert _report(name).distributed.matching_note == ""


def test_no_mixed_groups_note_when_the_partition_splits_pipeline_replicas() -> None:
    run = build_run_report(find_run([str(DATA / "pipeline_2stage_1f1b_dp2")]),
                           executor="serial", use_cache=False)
    assert run.distributed.matching_note == ""
