"""straggler: one rank arrives last at the collectives and the others wait for it."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed._run import mean_step_ns, mean_steps
from stepscope.advice.rules.distributed.pipeline import stage_explains
from stepscope.analysis.distributed.run import Distributed
from stepscope.units import format_us as fmt_us

MIN_SHARE_PCT = 40.0  # the rank causes at least this share of all waiting
MIN_WAIT_PCT = 2.0  # and the others' average wait is at least this share of the step


def check_run(dist: Distributed) -> Finding | None:
    if not dist.stragglers or dist.world_size < 2:
        return None
    top = dist.stragglers[0]
    if stage_explains(dist, top.rank):  # a heavier pipeline stage: pipeline-bubble's finding
        return None
    step = mean_step_ns(dist)
    # every other rank idles on average this long per step waiting for it
    saving_ns = top.wait_caused_ns / (dist.world_size - 1) / mean_steps(dist)
    pct = 100.0 * saving_ns / step if step else 0.0
    if top.share_pct < MIN_SHARE_PCT or pct < MIN_WAIT_PCT:
        return None
    cause = (
        f"its computation is {fmt_us(top.computation_excess_ns / 1000 / mean_steps(dist))} "
        "per step longer than the median rank's"
        if top.computation_excess_ns > 0.05 * step * mean_steps(dist)
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
    if top.computation_excess_ns > 0 and top.slower_ops:
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
