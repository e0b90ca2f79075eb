"""Rule: communication not overlapped by computation takes a large share of the step."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.analysis.distributed.comm_kernels import communication_mask
from stepscope.classify.communication import communication_family
from stepscope.model.trace import DEV_KERNEL

THRESHOLD_PCT = 10.0  # exposed communication, % of the average step

CODE = """\
# DDP: bigger buckets overlap more of the all-reduce with backward; no gradient copies
model = torch.nn.parallel.DistributedDataParallel(
    model, device_ids=[local_rank], bucket_cap_mb=100, gradient_as_bucket_view=True)
# gradient accumulation: communicate once per optimizer step, not once per micro-batch
for i, (x, y) in enumerate(loader):
    last = (i + 1) % accum_steps == 0
    ctx = contextlib.nullcontext() if last else model.no_sync()
    with ctx:
        loss_fn(model(x), y).backward()
    if last:
        optimizer.step(); optimizer.zero_grad(set_to_none=True)
# FSDP2: prefetch the next layers' all-gathers while this one computes
# for prev, nxt in zip(layers, layers[1:]): prev.set_modules_to_forward_prefetch([nxt])"""


FIX_TRAINING = ("Overlap communication with computation and communicate less often: DDP "
                "bucket_cap_mb and gradient_as_bucket_view=True; FSDP forward/backward "
                "prefetch; async tensor parallelism (torch._inductor.config._micro_pipeline_tp); "
                "run collectives on their own stream beside compute; a larger per-rank batch; "
                "gradient accumulation with model.no_sync() on the micro-batches.")
# inference (Premises.inference): no gradients to bucket or accumulate; the collectives are
# tensor parallelism's (or expert parallelism's) inside the forward pass
FIX_INFERENCE = ("Overlap the forward pass's collectives with computation or make fewer of "
                 "them: async tensor parallelism (torch._inductor.config._micro_pipeline_tp "
                 "with torch.compile), all-reduce fused with the next normalisation, fewer "
                 "tensor-parallel ranks when the model fits on fewer GPUs (or pipeline "
                 "parallelism across nodes), and more tokens per step so that the matmuls "
                 "outweigh the collectives.")


def check(ctx: Context) -> Finding | None:
    c = ctx.a.communication
    if c is None or not ctx.has_gpu or ctx.step_ns <= 0:
        return None
    exposed_pct = ctx.pct(c.exposed_per_step_ns)
    if exposed_pct < THRESHOLD_PCT:
        return None
    evidence = [
        f"communication not overlapped by computation: {fmt_ns(c.exposed_per_step_ns)} per step "
        f"({exposed_pct:.1f} % of a {fmt_ns(ctx.step_ns)} step, device {c.device})",
        f"overlap with compute kernels: {c.overlap_pct:.0f} % of {fmt_ns(c.comm_per_step_ns)} "
        "of communication per step",
    ]
    # the kernels behind it, over the same window (the steps) and device as the saving
    dev = ctx.trace.device
    on = (dev.device == c.device) & (dev.kind == DEV_KERNEL)
    inside = ctx.device_in_steps
    comm = on & communication_mask(ctx.trace, ctx.a.links) & (inside > 0)
    all_ns = float(inside[on].sum())
    if all_ns > 0:
        evidence.append(f"communication kernels: {100 * float(inside[comm].sum()) / all_ns:.0f} % "
                        "of kernel time in the steps")
    n = ctx.n_steps
    for name, ns, calls in top_by_name(dev.name[comm], inside[comm].astype(np.float64),
                                       ctx.trace.strings, 4):
        family = communication_family(name) or "marked by the trace"
        evidence.append(f"{family}: {short(name, 80)} ×{calls / n:,.0f}/step, "
                        f"{fmt_ns(ns / n)} per step")
    return ctx.finding(
        id="exposed-communication",
        title="Communication is not overlapped with computation",
        saving_ns=c.exposed_per_step_ns,
        estimate=("Exposed communication per step (communication kernels with no compute kernel "
                  "running beside them on the same GPU): the most that overlapping it with "
                  "computation can hide."),
        evidence=evidence,
        fix=FIX_INFERENCE if ctx.premises.inference else FIX_TRAINING,
        code=None if ctx.premises.inference else CODE,
        references=(
            "https://pytorch.org/docs/stable/generated/torch.nn.parallel.DistributedDataParallel.html",
            "https://pytorch.org/docs/stable/notes/ddp.html",
            "https://pytorch.org/docs/stable/distributed.fsdp.fully_shard.html",
        ),
    )
