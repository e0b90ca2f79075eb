"""Real pipeline-parallel captures (torch.distributed.pipelining over gloo, tests/data/distributed).

Structure is pinned exactly (stages, micro-batches, schedule); timings are pinned as the
analysis reads these committed files (rounded as the JSON rounds), and checked against what
the schedule's arithmetic allows whatever the machine's speed:

- the step cannot be shorter than the flow-shop makespan of its micro-batches,
  Σ_s c_s + (m − 1) · max_s c_s with c_s a stage's forward + backward per micro-batch
  (the first micro-batch crosses every stage, the slowest stage then handles the others one
  after another), so each stage's bubble ≥ 1 − m · c_s / that bound;
- a stage lighter than the mean waits for the heavy one beyond the equal-stage bubble
  (p − 1) / (m + p − 1).
Both hold for one stage per rank (GPipe, 1F1B); interleaved chunks are checked for the
identity idle = step − compute only.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest
from tests.conftest import ROOT

from stepscope.advice.rules.distributed import pipeline as pipeline_rule
from stepscope.report.run import RunReport, build_run_report, find_run

DATA = ROOT / "tests" / "data" / "distributed"
UNEVEN = {  # folder: (stages, micro-batches, schedule, where m comes from)
    "pipeline_2stage_gpipe": (2, 4, "GPipe", "schedule ranges"),
    "pipeline_2stage_1f1b": (2, 4, "1F1B", "point-to-point"),
    "pipeline_4stage_gpipe": (4, 8, "GPipe", "schedule ranges"),
    "pipeline_4stage_1f1b": (4, 8, "1F1B", "point-to-point"),
}
# bubble % per stage and imbalance as read from the committed captures
PINNED = {
    "pipeline_2stage_gpipe": ([75.23, 27.03], 1.493),
    "pipeline_2stage_1f1b": ([77.5, 24.1], 1.538),
    "pipeline_4stage_gpipe": ([83.81, 38.15, 81.59, 79.13], 2.168),
    "pipeline_4stage_1f1b": ([80.7, 43.51, 84.93, 71.72], 1.891),
    "pipeline_2stage_1f1b_balanced": ([50.31, 52.52], 1.05),
    "pipeline_2stage_1f1b_dp2": ([86.45, 32.63], 1.655),
    "pipeline_2rank_interleaved": ([67.34, 22.54], 1.407),
    "pipeline_2rank_zerobubble": ([66.43, 41.16], 1.275),
    "pipeline_4rank_interleaved": ([76.8, 35.84, 72.0, 76.83], 1.9),
}


@cache
def _report(name: str) -> RunReport:
    return build_run_report(find_run([str(DATA / name)]), executor="serial")


def _json(name: str) -> dict[str, Any]:
    out: dict[str, Any] = _report(name).to_json()
    return out


@pytest.mark.parametrize("name", sorted(UNEVEN))
def test_stages_microbatches_schedule(name: str) -> None:
    p, m, schedule, source = UNEVEN[name]
    d = _json(name)["distributed"]
    pipe = d["pipeline"]
    assert [s["stage"] for s in pipe["stages"]] == list(range(p))
    assert [s["ranks"] for s in pipe["stages"]] == [[k] for k in range(p)]
    assert (pipe["microbatches"], pipe["schedule"], pipe["microbatches_from"]) == (m, schedule,
                                                                                  source)
    assert pipe["theoretical_bubble_pct"] == pytest.approx(100 * (p - 1) / (m + p - 1), abs=0.01)
    # point-to-point calls are not collectives: nothing matched, nothing to straggle at
    assert d["matched_by"] == "order"
    assert d["calls"] == [] and d["collectives"] == [] and d["groups"] == []
    assert d["stragglers"] == []


@pytest.mark.parametrize("name", sorted(PINNED))
def test_bubbles_pinned_and_within_the_schedule_arithmetic(name: str) -> None:
    pipe = _json(name)["distributed"]["pipeline"]
    bubbles, imbalance = PINNED[name]
    assert [s["bubble_pct"] for s in pipe["stages"]] == pytest.approx(bubbles, abs=0.01)
    assert pipe["imbalance"] == pytest.approx(imbalance, abs=0.001)
    m, p = pipe["microbatches"], len(pipe["stages"])
    c = [s["forward_us_per_microbatch"] + s["backward_us_per_microbatch"]
         for s in pipe["stages"]]
    makespan = sum(c) + (m - 1) * max(c)
    mean_c = sum(c) / p
    for s, cs in zip(pipe["stages"], c, strict=True):
        assert s["idle_us"] == pytest.approx(s["step_us"] - s["compute_us"], abs=0.01)
        if pipe["stages_per_rank"] > 1:  # chunks interleave: not one flow shop per rank
            continue
        assert s["step_us"] >= makespan
        assert s["bubble_pct"] >= 100 * (1 - m * cs / makespan)
        if cs < mean_c:
            assert s["bubble_pct"] > pipe["theoretical_bubble_pct"]


@pytest.mark.parametrize("name", sorted(UNEVEN))
def test_heavy_stage_is_named_and_replaces_rank_advice(name: str) -> None:
    rep = _report(name)
    pipe = rep.distributed.pipeline
    assert pipe is not None
    heavy = max(pipe.stages, key=lambda s: s.compute_ns)
    assert heavy.stage == 1 and heavy.bubble_pct == min(s.bubble_pct for s in pipe.stages)
    ids = [f.id for f in rep.findings]
    assert ids == ["pipeline-bubble"]  # no straggler, rank-imbalance nor DDP overlap advice
    f = rep.findings[0]
    assert f.title.startswith("Pipeline stage 1 is ")
    assert "move layers out of stage 1" in f.fix
    idle = sum(s.idle_ns for s in pipe.stages) / len(pipe.stages)
    assert f.saving_us == pytest.approx(idle / 1000)


def test_balanced_pipeline_blames_no_stage() -> None:
    rep = _report("pipeline_2stage_1f1b_balanced")
    pipe = rep.distributed.pipeline
    assert pipe is not None and pipe.imbalance < pipeline_rule.MIN_IMBALANCE
    (f,) = rep.findings
    # gloo's millisecond point-to-point calls on a shared machine leave ~50 % idle: a real
    # bubble, reported as such, with no stage to blame
    assert f.id == "pipeline-bubble" and f.title.startswith("Pipeline bubble:")
    assert "move layers" not in f.fix and "more micro-batches" in f.fix


def test_text_report_has_the_pipeline_section() -> None:
    from io import StringIO

    from rich.console import Console

    from stepscope.report.text.distributed import render_run_text

    out = StringIO()
    render_run_text(_report("pipeline_4stage_1f1b"), Console(file=out, width=100))
    text = out.getvalue()
    assert "Pipeline: 4 stages, 8 micro-batches, schedule 1F1B" in text
    assert "theoretical bubble 27.3 %" in text
    assert "straggler" not in text


def test_data_parallel_replicas_of_a_pipeline() -> None:
    """2 stages x 2 replicas on gloo: the send/recv peers are ranks of the pipeline groups
    [0, 2] and [1, 3] (read through distributedInfo's pg_config); the gradient all-reduces of
    the two stages' data-parallel groups [0, 1] and [2, 3] carry no group name and are told
    apart by their calls (stage 0: 4 layers, stage 1: 12 layers, 2 steps)."""
    rep = _report("pipeline_2stage_1f1b_dp2")
    d = rep.distributed
    pipe = d.pipeline
    assert pipe is not None
    assert [s.ranks for s in pipe.stages] == [(0, 1), (2, 3)]
    assert (pipe.microbatches, pipe.schedule) == (4, "1F1B")
    assert d.matched_by == "order"
    assert [(g.pg, g.ranks, len(g.calls)) for g in d.groups] == [("", (0, 1), 2 * 8),
                                                                  ("", (2, 3), 2 * 24)]
    weight, bias = 512 * 512 * 4, 512 * 4
    for g in d.groups:
        assert {c.name for c in g.calls} == {"allreduce"}
        assert {c.nbytes for c in g.calls} == {weight, bias}
    assert d.unmatched_calls == 0
    ids = [f.id for f in rep.findings]
    assert ids[0] == "pipeline-bubble" and rep.findings[0].title.startswith("Pipeline stage 1")
    # on this shared machine rank 1 computed twice what its replica rank 0 did: that is a
    # replica's imbalance, reported against its own stage, not against the heavy stage
    imb = next(f for f in rep.findings if f.id == "rank-imbalance")
    assert imb.title.startswith("Ranks of pipeline stage 0 compute unequally (rank 1 ")
    strag = next(f for f in rep.findings if f.id == "straggler")
    assert strag.title.startswith("Rank 1 ") and "other ranks of its pipeline stage" in \
        strag.evidence[1]


@pytest.mark.parametrize(("name", "schedule", "p"), [
    ("pipeline_2rank_interleaved", "multi-stage", 2),
    ("pipeline_4rank_interleaved", "multi-stage", 4),  # a ring: rank 3 feeds rank 0
    ("pipeline_2rank_zerobubble", "zero-bubble", 2)])
def test_multi_stage_schedules(name: str, schedule: str, p: int) -> None:
    """Two model chunks per rank (virtual stages 0-3; stage 1, on rank 1, three times
    heavier): the schedules' PP:<stage>F<mb> actions give m (distinct micro-batch indices, not
    the 2 x 4 forward actions per rank) and the chunks; zero-bubble schedules add W actions."""
    rep = _report(name)
    pipe = _json(name)["distributed"]["pipeline"]
    assert [s["ranks"] for s in pipe["stages"]] == [[k] for k in range(p)]
    assert (pipe["microbatches"], pipe["microbatches_from"], pipe["schedule"],
            pipe["stages_per_rank"]) == (4, "schedule ranges", schedule, 2)
    assert pipe["theoretical_bubble_pct"] is None  # depends on the schedule's chunk order
    (f,) = rep.findings
    assert f.title.startswith("Pipeline stages of rank 1 are ")
    assert "interleaved 1F1B" not in f.fix  # it is interleaved already
    assert ("zero-bubble schedule" in f.fix) == (schedule != "zero-bubble")


@pytest.mark.parametrize("name", ["pipeline_2stage_gpipe", "pipeline_4stage_gpipe"])
def test_forward_backward_split_agrees_with_gpipes_ranges(name: str) -> None:
    """ScheduleGPipe runs each micro-batch's forward inside ``Forward i`` and its backward
    inside ``Backward i``: the split by autograd's ranges must put all compute of the Forward
    ranges in forward, and backward compute only inside the Backward ranges."""
    import numpy as np

    from stepscope.analysis.distributed import pipeline as P
    from stepscope.analysis.events import intervals as iv
    from stepscope.analysis.events.links import Links
    from stepscope.analysis.events.steps import find_steps
    from stepscope.formats import load_trace

    for path in sorted((DATA / name).glob("rank*.json.gz")):
        t = load_trace(str(path))
        links = Links(t)
        steps = find_steps(t, links).steps
        lo = np.array([s.start for s in steps], dtype=np.int64)
        hi = np.array([s.end for s in steps], dtype=np.int64)
        part = P.stage_part(t, links, lo, hi)
        assert part is not None
        s, e, _ = P._compute(t, links)
        comp = iv.intersect(iv.union(s, e), iv.union(lo, hi))
        h = t.host
        fwd_mask = t.string_ids(P._is_gpipe_forward)[h.name]
        bwd_mask = t.string_ids(P._is_gpipe_backward)[h.name]
        in_fwd = iv.length(iv.intersect(comp, iv.union(h.ts[fwd_mask], h.end[fwd_mask])))
        in_bwd = iv.length(iv.intersect(comp, iv.union(h.ts[bwd_mask], h.end[bwd_mask])))
        assert in_fwd <= part.forward_ns and part.backward_ns <= in_bwd
        assert part.forward_ns + part.backward_ns <= part.compute_ns
