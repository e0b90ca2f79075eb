"""rank-imbalance: computation per step differs across ranks; the slowest sets the pace."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed._run import mean_step_ns, mean_steps
from stepscope.advice.rules.distributed.expert_imbalance import explains
from stepscope.advice.rules.distributed.pipeline import imbalance_within_stages
from stepscope.analysis.distributed.run import Distributed
from stepscope.units import format_us as fmt_us

MIN_RATIO = 1.10  # slowest rank's computation / mean


def check_run(dist: Distributed) -> Finding | None:
    imb = dist.imbalance
    if dist.world_size < 2 or imb.max_over_mean is None or imb.max_over_mean < MIN_RATIO:
        return None
    if explains(dist, imb.slowest_rank):  # an MoE skew: expert-imbalance says why
        return None
    if dist.pipeline is not None:  # unequal stages are pipeline-bubble's; replicas are ours
        return imbalance_within_stages(dist)
    steps = mean_steps(dist)
    saving_ns = (imb.computation_max_ns - imb.computation_mean_ns) / steps
    step = mean_step_ns(dist)
    return Finding(
        id="rank-imbalance",
        title=f"Computation is imbalanced across ranks (slowest rank {imb.slowest_rank} "
              f"{imb.max_over_mean:.2f}x the mean)",
        saving_us=saving_ns / 1000.0, saving_pct=100.0 * saving_ns / step if step else 0.0,
        estimate="slowest rank's computation minus the mean, per step (what balancing saves)",
        evidence=(
            f"computation per rank: min {fmt_us(imb.computation_min_ns / 1000 / steps)}, "
            f"mean {fmt_us(imb.computation_mean_ns / 1000 / steps)}, "
            f"max {fmt_us(imb.computation_max_ns / 1000 / steps)} per step",
        ),
        fix="Balance the work per rank: shard data by tokens rather than samples (or bucket "
            "by sequence length), split pipeline stages / embedding tables evenly.",
    )
