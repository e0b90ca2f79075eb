"""low-comm-overlap: across the ranks, communication mostly runs while nothing computes."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed import expert_imbalance, fsdp_prefetch
from stepscope.advice.rules.distributed._run import mean_step_ns
from stepscope.analysis.distributed.run import Distributed
from stepscope.units import format_us as fmt_us

MAX_OVERLAP_PCT = 50.0
MIN_EXPOSED_PCT = 5.0  # exposed communication share of the step


def check_run(dist: Distributed) -> Finding | None:
    rows = [r for r in dist.ranks if r.comm_overlap_pct is not None]
    if not rows or dist.world_size < 2:
        return None
    # the MoE all-to-all and FSDP's all-gathers have their own, specific advice
    if expert_imbalance.dominates_communication(dist) or fsdp_prefetch.fires(dist):
        return None
    overlap = sum(r.comm_overlap_pct or 0.0 for r in rows) / len(rows)
    # waiting for a late rank is the straggler rule's; only exposed transfer can be hidden.
    # On a pipeline, communication is mostly point-to-point waits (pipeline-bubble's): only
    # the collectives' transfer time can be exposed collective communication.
    pipe = dist.pipeline is not None
    exposed = sum(max(min(r.communication_ns - r.sync_ns, r.transfer_ns) if pipe
                      else r.communication_ns - r.sync_ns, 0) / max(r.steps, 1)
                  for r in rows) / len(rows)
    step = mean_step_ns(dist)
    pct = 100.0 * exposed / step if step else 0.0
    if overlap >= MAX_OVERLAP_PCT or pct < MIN_EXPOSED_PCT:
        return None
    return Finding(
        id="low-comm-overlap",
        title=f"Communication overlaps computation only {overlap:.0f} % of the time across ranks",
        saving_us=exposed / 1000.0, saving_pct=pct,
        estimate="the data transfer no computation hides (synchronisation wait excluded), "
                 "per step averaged over ranks (upper bound: all of it hidden)",
        evidence=(
            f"mean communication/computation overlap {overlap:.1f} % over {len(rows)} ranks",
            f"exposed data transfer {fmt_us(exposed / 1000)} per step ({pct:.1f} % of the step)",
        ),
        fix="Let gradients reduce while backward still runs: tune DDP's bucket_cap_mb (smaller "
            "buckets start earlier), accumulate micro-batches under no_sync() so only the last "
            "one communicates, enable FSDP forward/backward prefetch, or raise the per-rank "
            "batch so computation outgrows communication.",
        code="model = DDP(model, bucket_cap_mb=25, gradient_as_bucket_view=True)\n"
             "with model.no_sync():  # accumulation steps\n    loss.backward()",
        references=("https://pytorch.org/docs/stable/notes/ddp.html",),
    )
