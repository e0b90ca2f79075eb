"""Pipeline view from ranks' point-to-point traffic (synthetic parts), and the rules that
must tell a heavy stage from a straggling rank."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.builders import TraceBuilder
from tests.distributed_builders import write_run

from stepscope.advice.rules.distributed import pipeline as rule
from stepscope.advice.rules.distributed import rank_imbalance, straggler
from stepscope.analysis.distributed.pipeline import Pipeline, Stage, StagePart, pipeline_view
from stepscope.analysis.distributed.run import Distributed
from stepscope.report.run import build_run_report, find_run

MS = 1_000_000


def _part(sends: dict[int, int], recvs: dict[int, int], first: str, *, compute_ms: float,
          step_ms: float = 100.0, before: int = 0, mb: int | None = None,
          schedule: str | None = None) -> StagePart:
    return StagePart(
        steps=2, step_ns=int(2 * step_ms * MS), compute_ns=int(2 * compute_ms * MS),
        forward_ns=int(2 * compute_ms * MS / 3), backward_ns=int(2 * compute_ms * MS * 2 / 3),
        sends=tuple(sorted(sends.items())), recvs=tuple(sorted(recvs.items())),
        first_call=first, sends_before_recv=before, microbatches=mb, schedule=schedule)


def _chain(ranks: list[int], m: int, before: int, compute_ms: list[float]) -> dict[int, StagePart]:
    """One pipeline over ``ranks`` in stage order: m activations and m gradients per step."""
    parts = {}
    for k, r in enumerate(ranks):
        sends, recvs = {}, {}
        if k + 1 < len(ranks):
            sends[ranks[k + 1]] = 2 * m
            recvs[ranks[k + 1]] = 2 * m
        if k > 0:
            sends[ranks[k - 1]] = sends.get(ranks[k - 1], 0) + 2 * m
            recvs[ranks[k - 1]] = recvs.get(ranks[k - 1], 0) + 2 * m
        parts[r] = _part(sends, recvs, "send" if k == 0 else "recv",
                         compute_ms=compute_ms[k], before=before if k == 0 else 0)
    return parts


def test_stages_from_chains_with_data_parallel_replicas() -> None:
    # two replicas of a 3-stage pipeline; the first stage is the rank that sends first, not
    # the lowest rank: replica A runs 4 -> 0 -> 2, replica B 5 -> 1 -> 3
    parts = _chain([4, 0, 2], 8, 3, [20, 60, 20]) | _chain([5, 1, 3], 8, 3, [20, 60, 20])
    pipe = pipeline_view(parts)
    assert pipe is not None
    assert [s.ranks for s in pipe.stages] == [(4, 5), (0, 1), (2, 3)]
    # m from the activations the first stage sends downstream; 1F1B: p sends before a recv
    assert (pipe.microbatches, pipe.microbatches_from, pipe.schedule) == (8, "point-to-point",
                                                                         "1F1B")
    assert pipe.theoretical_bubble_pct == pytest.approx(100 * 2 / 10)
    assert pipe.imbalance == pytest.approx(60 / (100 / 3))
    assert pipe.stages[1].bubble_pct == pytest.approx(40.0)
    assert pipe.per_microbatch(pipe.stages[1].forward_ns) == pytest.approx(20 * MS / 8, rel=1e-6)


def test_schedule_from_the_first_stage_order() -> None:
    gpipe = pipeline_view(_chain([0, 1], 4, 4, [50, 50]))
    assert gpipe is not None and gpipe.schedule == "GPipe"
    # m <= p: GPipe and 1F1B issue the same calls; the schedule is left unknown
    same = pipeline_view(_chain([0, 1, 2, 3], 4, 4, [50] * 4))
    assert same is not None and same.schedule is None
    assert same.theoretical_bubble_pct == pytest.approx(100 * 3 / 7)


def test_interleaved_ring() -> None:
    """Interleaved schedules over 4 ranks: rank r holds stages r and r + 4, so rank 3 sends
    to rank 0 too; the ring starts at the rank that sends first, toward its first peer."""
    order = [2, 0, 3, 1]  # stage order, not rank order
    parts = {}
    for k, r in enumerate(order):
        nxt, prev = order[(k + 1) % 4], order[k - 1]
        parts[r] = dataclasses.replace(
            _part({nxt: 8, prev: 8}, {nxt: 8, prev: 8}, "send" if k == 0 else "recv",
                  compute_ms=50, mb=4, schedule="multi-stage"), chunks=2, first_peer=nxt)
    pipe = pipeline_view(parts)
    assert pipe is not None and [s.ranks for s in pipe.stages] == [(2,), (0,), (3,), (1,)]
    assert (pipe.stages_per_rank, pipe.theoretical_bubble_pct) == (2, None)
    # the same ring without the schedules' chunks is not taken for a pipeline
    plain = {r: dataclasses.replace(p, chunks=1) for r, p in parts.items()}
    assert pipeline_view(plain) is None


def test_no_pipeline_without_a_chain() -> None:
    ring = {r: _part({(r + 1) % 3: 4}, {(r - 1) % 3: 4}, "send", compute_ms=50)
            for r in range(3)}
    assert pipeline_view(ring) is None
    hub = {0: _part({1: 4, 2: 4, 3: 4}, {}, "send", compute_ms=50)}
    hub |= {r: _part({}, {0: 4}, "recv", compute_ms=50) for r in (1, 2, 3)}
    assert pipeline_view(hub) is None
    assert pipeline_view({}) is None


@pytest.fixture(scope="module")
def ddp(tmp_path_factory: pytest.TempPathFactory) -> Distributed:
    """A synthetic 4-rank data-parallel run where rank 2 computes 3 ms more (a straggler)."""
    directory = tmp_path_factory.mktemp("ddp")
    write_run(directory, [1000, 1000, 4000, 1000])
    return build_run_report(find_run([str(directory)]), executor="serial",
                            use_cache=False).distributed


def test_rule_silent_on_a_small_bubble_and_fires_on_a_large_one(ddp: Distributed) -> None:
    def dist(idle_ms: float, compute: tuple[float, float]) -> Distributed:
        stages = tuple(Stage(stage=k, ranks=(k,), step_ns=(c + idle_ms) * MS,
                             compute_ns=c * MS, idle_ns=idle_ms * MS, forward_ns=c * MS / 3,
                             backward_ns=2 * c * MS / 3) for k, c in enumerate(compute))
        pipe = Pipeline(stages=stages, microbatches=32, microbatches_from="point-to-point",
                        schedule="1F1B", theoretical_bubble_pct=100 / 33,
                        imbalance=max(compute) / (sum(compute) / 2))
        return dataclasses.replace(ddp, pipeline=pipe)

    assert rule.check_run(dist(5, (95, 95))) is None  # 5 % idle: under MIN_BUBBLE_PCT
    f = rule.check_run(dist(40, (60, 60)))
    assert f is not None and f.title == "Pipeline bubble: stages idle 40 % of the step"
    assert f.saving_us == pytest.approx(40_000)


def _stages(groups: list[tuple[int, ...]]) -> Pipeline:
    stages = tuple(Stage(stage=k, ranks=g, step_ns=5 * MS, compute_ns=2 * MS, idle_ns=3 * MS,
                         forward_ns=MS, backward_ns=MS) for k, g in enumerate(groups))
    return Pipeline(stages=stages, microbatches=4, microbatches_from="point-to-point",
                    schedule="1F1B", theoretical_bubble_pct=None, imbalance=1.0)


def test_data_parallel_rules_defer_to_the_stage(ddp: Distributed) -> None:
    d = ddp
    assert d.pipeline is None and d.stragglers[0].rank == 2
    assert straggler.check_run(d) is not None and rank_imbalance.check_run(d) is not None
    # rank 2 alone in its stage: its extra compute is the stage's
    alone = dataclasses.replace(d, pipeline=_stages([(0,), (1,), (2,), (3,)]))
    assert straggler.check_run(alone) is None
    assert rank_imbalance.check_run(alone) is None
    # rank 2 beside rank 0 in one stage (data-parallel replicas): slower than its own stage,
    # a straggler after all
    shared = dataclasses.replace(d, pipeline=_stages([(0, 2), (1, 3)]))
    late = straggler.check_run(shared)
    assert late is not None and "other ranks of its pipeline stage" in late.evidence[1]
    # the all-reduce spans all 4 ranks: 3 ms x 3 ranks x 2 steps / 3 ranks / 2 steps
    assert late.saving_us == pytest.approx(3000, abs=1)
    imb = rank_imbalance.check_run(shared)
    assert imb is not None and imb.title.startswith(
        "Ranks of pipeline stage 0 compute unequally (rank 2 1.60x")


def test_peers_are_read_through_the_process_groups() -> None:
    """Two replicas of a 2-stage pipeline (pipeline groups [0, 2] and [1, 3]): every rank
    records its peer as group rank 0 or 1, as the gloo captures do."""
    world = ("0", (0, 1, 2, 3))
    groups = {0: (world, ("1", (0, 2)), ("3", (0, 1))), 1: (world, ("2", (1, 3)), ("3", (0, 1))),
              2: (world, ("1", (0, 2)), ("4", (2, 3))), 3: (world, ("2", (1, 3)), ("4", (2, 3)))}
    parts = {r: dataclasses.replace(
        _part({1 if r < 2 else 0: 8}, {1 if r < 2 else 0: 8}, "send" if r < 2 else "recv",
              compute_ms=50, before=4), groups=groups[r]) for r in range(4)}
    pipe = pipeline_view(parts)
    assert pipe is not None and [s.ranks for s in pipe.stages] == [(0, 1), (2, 3)]
    assert pipe.microbatches == 4
    # read as global ranks instead, the traffic is not mirrored: no pipeline is invented
    bare = {r: dataclasses.replace(p, groups=()) for r, p in parts.items()}
    assert pipeline_view(bare) is None


def _gpu_stage(rank: int) -> TraceBuilder:
    """One step of a 2-stage, 2-micro-batch GPipe on GPUs (µs): GEMM kernels launched in
    forward and inside autograd's evaluate_function ranges (backward), NCCL SendRecv kernels
    for the point-to-point calls; each stage computes 2 x 1 ms forward + 2 x 2 ms backward
    in a 10 ms step."""
    b = TraceBuilder()
    b.distributed = {"backend": "nccl", "rank": rank, "world_size": 2}
    peer = ["", "", str(1 - rank), "0"]
    p2p = {"Collective name": "send", "In msg nelems": 1024, "Out msg nelems": 1024,
           "Group size": 2, "dtype": "Float", "Process Group Name": "0"}

    def call(name: str, ts: float) -> None:
        b.op(name, ts, 10, concrete=peer)
        b.launch(None, "cudaLaunchKernel", ts + 1, 5, kernel="ncclDevKernel_SendRecv(x)",
                 k_ts=ts + 20, k_dur=50, stream=20, **p2p)

    with b.step(1, 0.0, 10_000.0):
        first, then = ("c10d::send", "c10d::recv_") if rank == 0 else ("c10d::recv_",
                                                                       "c10d::send")
        for k, t0 in enumerate((100.0, 1600.0)):  # forward of micro-batches 0 and 1
            b.launch(None, "cudaLaunchKernel", t0, 5, kernel="sm90_gemm_fwd",
                     k_ts=t0 + 100, k_dur=1000)
            call(first, t0 + 1200 + k)
        for t0 in (4000.0, 6500.0):  # backward of micro-batches 0 and 1
            call(then, t0)
            b.op("autograd::engine::evaluate_function: AddmmBackward0", t0 + 100, 50)
            b.launch(None, "cudaLaunchKernel", t0 + 110, 5, kernel="sm90_gemm_bwd",
                     k_ts=t0 + 200, k_dur=2000)
    return b


def test_gpu_pipeline_compute_from_kernels(tmp_path: Path) -> None:
    for rank in (0, 1):
        _gpu_stage(rank).write(tmp_path, f"rank{rank}.pt.trace.json")
    d = build_run_report(find_run([str(tmp_path)]), executor="serial", use_cache=False
                         ).distributed
    assert d.calls == () and d.collectives == () and d.groups == ()  # SendRecv: not collectives
    pipe = d.pipeline
    assert pipe is not None and [s.ranks for s in pipe.stages] == [(0,), (1,)]
    assert (pipe.microbatches, pipe.microbatches_from) == (2, "point-to-point")
    for s in pipe.stages:
        assert s.forward_ns == 2 * 1000 * 1000 and s.backward_ns == 2 * 2000 * 1000
        assert s.compute_ns == 6000 * 1000
        assert s.step_ns == 10_000 * 1000 and s.bubble_pct == pytest.approx(40.0)


def test_hostile_peers_are_unknown() -> None:
    from stepscope.analysis.distributed.pipeline import _peer

    assert _peer('["", "", "3", "0"]') == 3
    for text in ('["", "", "99999999999999999999", "0"]', '["", "", "-1"]', '["", ""]',
                 "not json", '{"a": 1}', '["", "", [1], "0"]'):
        assert _peer(text) == -1
