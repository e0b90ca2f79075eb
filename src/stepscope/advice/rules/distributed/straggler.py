"""straggler: one rank arrives last at the collectives and the others wait for it."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed._run import mean_step_ns, mean_steps
from stepscope.advice.rules.distributed.expert_imbalance import explains
from stepscope.advice.rules.distributed.pipeline import stage_context, stage_explains
from stepscope.analysis.distributed.run import Distributed
from stepscope.units import format_us as fmt_us

MIN_SHARE_PCT = 40.0  # the rank causes at least this share of all waiting
MIN_WAIT_PCT = 2.0  # and the others' average wait is at least this share of the step


def check_run(dist: Distributed) -> Finding | None:
    if not dist.stragglers or dist.world_size < 2:
        return None
    top = dist.stragglers[0]
    if explains(dist, top.rank):  # an MoE skew: expert-imbalance says why and what to do
        return None
    if stage_explains(dist, top.rank):  # a heavier pipeline stage: pipeline-bubble's finding
        return None
    step = mean_step_ns(dist)
    # the ranks that can wait for it: its process group's (e.g. a pipeline stage's replicas)
    others = max([len(g.ranks) for g in dist.groups if top.rank in g.ranks],
                 default=dist.world_size) - 1
    # on a pipeline it compares with its stage's other ranks, which do the same work
    stage = stage_context(dist, top.rank)
    excess = (top.computation_excess_ns if stage is None
              else stage[1] * mean_steps(dist))
    # every other rank idles on average this long per step waiting for it
    saving_ns = top.wait_caused_ns / max(others, 1) / mean_steps(dist)
    pct = 100.0 * saving_ns / step if step else 0.0
    if top.share_pct < MIN_SHARE_PCT or pct < MIN_WAIT_PCT:
        return None
    cause = (
        f"its computation is {fmt_us(excess / 1000 / mean_steps(dist))} "
        "per step longer than " + ("the median rank's" if stage is None else
                                   "the other ranks of its pipeline stage")
        if excess > 0.05 * step * mean_steps(dist)
        else "its computation is not longer than the others': look at its input pipeline, "
        "host (CPU contention, GC) or hardware (a slower/throttled GPU, a slower link)"
    )
    steps = mean_steps(dist)
    evidence = [
        f"rank {top.rank} arrived last at {top.last_arrivals} of {top.matched_calls} "
        f"matched collectives and caused {top.share_pct:.0f} % of all waiting "
        f"({fmt_us(top.wait_caused_ns / 1000)} summed over ranks)",
        f"what makes it slow: {cause}",
    ]
    if excess > 0 and top.slower_ops:
        evidence.append("longer than on the median rank: " + ", ".join(
            f"{name} +{fmt_us(ns / 1000 / steps)}/step" for name, ns in top.slower_ops))
    return Finding(
        id="straggler",
        title=f"Rank {top.rank} is a straggler: the other ranks wait for it at collectives",
        saving_us=saving_ns / 1000.0, saving_pct=pct,
        estimate="the waiting it causes at collectives, averaged over the other ranks and steps",
        evidence=tuple(evidence),
        fix=f"Profile rank {top.rank} alone and remove what makes it slower (uneven data "
            "sharding or sequence lengths, a slow data loader worker, another process on its "
            "host or GPU); balance the work per rank.",
        references=("https://hta.readthedocs.io/en/latest/source/features/temporal_breakdown.html",),
    )
