"""Rule 2: low GPU utilisation with small per-step work -> a larger batch."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.warmup import FIRST_CALL_RATIO

UTIL_PCT = 50.0  # torch-tb-profiler: GPU utilization < 50 %
SM_EFF_PCT = 50.0  # and the kernels that run do not fill the SMs either
OTHER_CAUSE_PCT = 5.0  # leave steps dominated by loading or syncs to their own rules


def _mean_in_steps(ctx: Context) -> float:
    """Mean duration of the main GPU's device ops in the steps (the window of the saving)."""
    sel = ctx.device_sel & (ctx.device_in_steps > 0)
    return float(np.mean(ctx.trace.device.dur[sel])) if sel.any() else 0.0


CODE_TRAINING = """\
loader = DataLoader(dataset, ..., batch_size=2 * batch_size)
for group in optimizer.param_groups:   # linear scaling rule (with warm-up)
    group["lr"] *= 2"""

CODE_INFERENCE = """\
# GPU work grows with the batch; host time per call does not
with torch.inference_mode():
    for batch in DataLoader(inputs, batch_size=2 * batch_size):
        outputs = model(batch.to(device, non_blocking=True))"""


def _fix(ctx: Context) -> str:
    """The fix for this run (Premises.training / inference): training scales its learning
    rate with the batch; inference batches more inputs per call, and a model served by vLLM
    through vLLM's own batching limits; a run the trace cannot tell (CUDA calls only) hears
    both."""
    p = ctx.premises
    if p.vllm is not None:
        return ("Let vLLM batch more requests per step: raise max_num_seqs and "
                "max_num_batched_tokens (and gpu_memory_utilization if the KV cache limits "
                "them), and send it more concurrent requests.")
    if not p.training and not p.inference:  # an export of CUDA calls: the run is unknown
        return ("Increase the batch size: in training, scale the learning rate with it (e.g. "
                "linearly with warm-up); in inference, batch more inputs or requests per "
                "forward pass.")
    if p.inference:
        return ("Give each forward pass more inputs: batch several inputs or requests "
                "together (a larger batch_size offline, dynamic batching when serving). If the "
                "latency of one request is what counts, cut the host time per call instead "
                + (f"(torch.compile(mode=\"reduce-overhead\"), {p.graphs})." if p.graph_api
                   else "(torch.compile fuses kernels)."))
    return ("Increase the batch size (scale the learning rate accordingly, e.g. linearly with "
            "warm-up); if memory limits it, use "
            + ("activation checkpointing" if p.low_precision else "AMP or activation checkpointing")
            + " to make room.")


def _code(ctx: Context) -> str | None:
    p = ctx.premises
    if p.vllm is not None or not (p.training or p.inference):
        return None
    return CODE_TRAINING if p.training else CODE_INFERENCE


def check(ctx: Context) -> Finding | None:
    a = ctx.a
    if not ctx.has_gpu or not a.steps.profiler_steps:
        return None
    g = next((m for m in a.gpu if m.device == ctx.main_device), None)
    if g is None or g.utilization_pct >= UTIL_PCT:
        return None
    if g.sm_efficiency_pct is not None and g.sm_efficiency_pct >= SM_EFF_PCT:
        return None
    if a.breakdown.pct.get("dataloader", 0.0) > OTHER_CAUSE_PCT:
        return None
    rt, sync = ctx.trace.runtime, ctx.sync_calls
    sync_ns = ctx.per_step_union(rt.ts[sync], rt.end[sync])
    if ctx.pct(sync_ns) > OTHER_CAUSE_PCT:
        return None
    # GPU idle time while the host compiles or makes a first call or launch is warm-up,
    # paid once: a larger batch does not shrink it and the steady state does not have it
    warm = iv.length(ctx.warm_up_idle) / ctx.n_steps
    busy, idle = ctx.busy_per_step, ctx.idle_per_step - warm
    step = ctx.step_ns - warm
    if warm > 0 and 100.0 * busy >= UTIL_PCT * step:
        return None
    saving = idle / 2.0
    speedup = step / (busy + idle / 2.0) if busy + idle > 0 else 1.0
    utilization = (
        f"GPU utilization {g.utilization_pct:.1f} % (busy {fmt_ns(busy)} of a "
        f"{fmt_ns(ctx.step_ns)} step)" if warm <= 0 else
        f"GPU utilization {100.0 * busy / step:.1f} % without warm-up (busy {fmt_ns(busy)} of "
        f"{fmt_ns(step)} per step; {g.utilization_pct:.1f} % with it)")
    evidence = [
        utilization,
        f"est. SM efficiency {g.sm_efficiency_pct:.1f} %" if g.sm_efficiency_pct is not None
        else "est. SM efficiency not recorded",
        f"mean kernel {fmt_ns(_mean_in_steps(ctx))}",
        f"doubling the batch: about {fmt_ns(2 * busy + idle)} per step for twice the samples, "
        f"up to {100 * (speedup - 1):.0f} % more samples/s",
        ctx.premises.run_line,
    ]
    if warm > 0:
        evidence.append(
            f"{fmt_ns(warm)} per step of GPU idle time is warm-up, not counted: JIT "
            "compilation, or the first call of an operator or first launch of a kernel "
            f"{FIRST_CALL_RATIO:.0f}× or more slower than the later ones")
    return ctx.finding(
        id="small-batch", title="Low GPU utilization with little work per step: use a larger batch",
        saving_ns=saving,
        estimate=("Doubling the batch doubles GPU work but not the per-step idle time, so per "
                  "step's worth of samples it saves at most half of today's GPU idle time."),
        evidence=evidence,
        fix=_fix(ctx), code=_code(ctx),
        references=("https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html",),
    )
