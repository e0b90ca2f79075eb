"""pipeline-bubble: pipeline stages idle (unequal stages, too few micro-batches).

Also decides when the data-parallel rules must stay silent on a pipeline: a rank of a heavier
stage computes more and the others wait for it, but that is the stage's doing, not uneven
data (docs/distributed.md).
"""

from __future__ import annotations

from statistics import median

from stepscope.advice.finding import Finding
from stepscope.analysis.distributed.pipeline import Pipeline, Stage
from stepscope.analysis.distributed.run import Distributed, RankRow
from stepscope.units import format_us as fmt_us

MIN_BUBBLE_PCT = 10.0  # mean idle over the stages, % of the step
MIN_IMBALANCE = 1.10  # largest stage compute / mean: as the rank-imbalance rule
OWN_STAGE_PCT = 5.0  # a rank slower than its stage's others by more than this % of the step

CODE = """\
from torch.distributed.pipelining import (
    PipelineStage, Schedule1F1B, ScheduleInterleaved1F1B, ScheduleInterleavedZeroBubble)
# 1. equal stages: split where measured time per layer balances
# 2. more micro-batches: the bubble (p-1)/(m+p-1) shrinks
schedule = Schedule1F1B(stage, n_microbatches=4 * num_stages,
                        loss_fn=loss_fn)
# 3. two smaller stages per rank, interleaved; zero-bubble also
#    runs weight gradients inside the bubble
stages = [PipelineStage(chunk, rank + i * world, 2 * world, device)
          for i, chunk in enumerate(my_two_chunks)]
schedule = ScheduleInterleavedZeroBubble(stages, n_microbatches=8,
                                         loss_fn=loss_fn)"""


def _stage_of(pipe: Pipeline, rank: int) -> Stage | None:
    return next((s for s in pipe.stages if rank in s.ranks), None)


def _per_step(row: RankRow) -> float:
    return (row.computation_ns + row.overlap_ns) / max(row.steps, 1)


def stage_explains(dist: Distributed, rank: int) -> bool:
    """True when ``rank`` is part of a pipeline and not slower than its own stage's ranks."""
    ctx = stage_context(dist, rank)
    stage = None if dist.pipeline is None else _stage_of(dist.pipeline, rank)
    if ctx is None or stage is None:
        return False
    return ctx[1] <= OWN_STAGE_PCT / 100 * stage.step_ns


def stage_context(dist: Distributed, rank: int) -> tuple[int, float] | None:
    """On a pipeline: the size of ``rank``'s stage and its computation per step beyond the
    median of the stage's other ranks (its replicas; 0 without); None when in no stage."""
    stage = None if dist.pipeline is None else _stage_of(dist.pipeline, rank)
    rows = {r.rank: r for r in dist.ranks}
    if stage is None or rank not in rows:
        return None
    others = [_per_step(rows[r]) for r in stage.ranks if r != rank and r in rows]
    return len(stage.ranks), _per_step(rows[rank]) - median(others) if others else 0.0


def imbalance_within_stages(dist: Distributed) -> Finding | None:
    """rank-imbalance on a pipeline: ranks of one stage (data-parallel replicas doing the same
    work) computing differently. Differences between stages are pipeline-bubble's."""
    if dist.pipeline is None:
        return None
    rows = {r.rank: r for r in dist.ranks}
    worst: tuple[float, Stage, int, float] | None = None
    for s in dist.pipeline.stages:
        comp = {r: _per_step(rows[r]) for r in s.ranks if r in rows}
        mean = sum(comp.values()) / len(comp) if comp else 0.0
        if len(comp) < 2 or mean <= 0:
            continue
        slow = max(comp, key=lambda r: comp[r])
        if worst is None or comp[slow] / mean > worst[0]:
            worst = (comp[slow] / mean, s, slow, mean)
    if worst is None or worst[0] < MIN_IMBALANCE:
        return None
    ratio, stage, slow, mean = worst
    saving = _per_step(rows[slow]) - mean
    return Finding(
        id="rank-imbalance",
        title=f"Ranks of pipeline stage {stage.stage} compute unequally (rank {slow} "
              f"{ratio:.2f}x the stage's mean)",
        saving_us=saving / 1000.0,
        saving_pct=100.0 * saving / stage.step_ns if stage.step_ns else 0.0,
        estimate="slowest rank's computation minus its stage's mean, per step: the stage's "
                 "data-parallel replicas wait for it",
        evidence=(
            "computation per step in stage "
            f"{stage.stage}: " + ", ".join(f"rank {r} {fmt_us(_per_step(rows[r]) / 1000)}"
                                           for r in stage.ranks if r in rows),
            "the ranks of one stage hold the same layers: the difference is their data "
            "(sequence lengths), their host (CPU contention, data loading) or their device",
        ),
        fix=f"Profile rank {slow} against the other ranks of stage {stage.stage}: balance the "
            "data per replica (shard by tokens, bucket by length), remove contention on its "
            "host or device.",
    )


def check_run(dist: Distributed) -> Finding | None:
    pipe = dist.pipeline
    if pipe is None:
        return None
    p, m = len(pipe.stages), pipe.microbatches
    step = sum(s.step_ns for s in pipe.stages) / p
    idle = sum(s.idle_ns for s in pipe.stages) / p
    pct = 100.0 * idle / step if step > 0 else 0.0
    if pct < MIN_BUBBLE_PCT:
        return None
    heavy = max(pipe.stages, key=lambda s: s.compute_ns)
    ranks = ", ".join(map(str, heavy.ranks))
    evidence = [
        f"{p} stages, {m if m else 'unknown'} micro-batches per step"
        + (f" (from {pipe.microbatches_from})" if m else "")
        + (f", schedule {pipe.schedule}" if pipe.schedule else "")
        + (f": with equal stages the bubble would be {pipe.theoretical_bubble_pct:.0f} %"
           if pipe.theoretical_bubble_pct is not None else ""),
        "bubble per stage: " + ", ".join(
            f"stage {s.stage} {s.bubble_pct:.0f} % (compute {fmt_us(s.compute_ns / 1000)} "
            f"of {fmt_us(s.step_ns / 1000)})" for s in pipe.stages),
    ]
    imbalanced = pipe.imbalance >= MIN_IMBALANCE
    if m:
        c = [(s.forward_ns + s.backward_ns) / m for s in pipe.stages]
        part = (m - 1) * (max(c) - sum(c) / p)
        evidence.append(
            f"stage {heavy.stage} (rank {ranks}): forward {fmt_us(heavy.forward_ns / m / 1000)} "
            f"+ backward {fmt_us(heavy.backward_ns / m / 1000)} per micro-batch, "
            f"{pipe.imbalance:.2f}x the mean stage compute")
        if imbalanced:
            evidence.append(
                f"of the {fmt_us(idle / 1000)} mean idle per step, about {fmt_us(part / 1000)} "
                "is the imbalance ((m - 1) x (slowest - mean) compute per micro-batch); the rest "
                "is pipeline fill/drain and point-to-point waits")
    v = pipe.stages_per_rank
    if v > 1:
        evidence[0] += f", {v} model chunks (virtual stages) per rank"
    # what the run does not do already
    remedies = ["more micro-batches per step (m >= 4p keeps (p-1)/(m+p-1) under 20 %)"]
    if v == 1:
        remedies.append("interleaved 1F1B (ScheduleInterleaved1F1B, several smaller stages "
                        "per rank)")
    if pipe.schedule != "zero-bubble":
        remedies.append("a zero-bubble schedule (ScheduleInterleavedZeroBubble, "
                        "ScheduleZBVZeroBubble), which runs the weight gradients in the bubble")
    where = f"stage {heavy.stage}" if v == 1 else f"the stages of rank {ranks}"
    if imbalanced:
        title = ((f"Pipeline stage {heavy.stage} is" if v == 1 else
                  f"Pipeline stages of rank {ranks} are") + f" {pipe.imbalance:.2f}x the mean: "
                 f"the other stages idle ({pct:.0f} % bubble)")
        fix = (f"Balance the stages: move layers out of {where} (rank {ranks}) into the lighter "
               "stages, splitting where the measured time per layer balances (not the layer or "
               "parameter count). Then shrink the fill/drain bubble: " + "; ".join(remedies)
               + ".")
    else:
        title = f"Pipeline bubble: stages idle {pct:.0f} % of the step"
        fix = "Shrink the fill/drain bubble: " + "; ".join(remedies) + "."
    return Finding(
        id="pipeline-bubble", title=title, saving_us=idle / 1000.0, saving_pct=pct,
        estimate="mean idle time per step over the stages: what balanced stages without "
                 "fill/drain would compute instead (upper bound)",
        evidence=tuple(evidence), fix=fix, code=CODE,
        references=(
            "https://pytorch.org/docs/stable/distributed.pipelining.html",
            "https://arxiv.org/abs/1811.06965",
            "https://arxiv.org/abs/2104.04473",
            "https://arxiv.org/abs/2401.10241",
        ),
    )
