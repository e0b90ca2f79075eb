"""Rule 4: host-device synchronisation stalls the CPU (and, through it, the GPU)."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.classify import names
from stepscope.model.trace import HOST_OP
from stepscope.units import count

THRESHOLD_PCT = 5.0  # synchronising calls, % of the step
MIN_SAVING_PCT = 1.0

CODE = """\
# keep values on the GPU inside the loop; synchronise rarely
running_loss = torch.zeros((), device=device)
for i, (x, y) in enumerate(loader):
    loss = step(x, y)
    running_loss += loss.detach()          # no .item() / .cpu() / print(tensor) per step
    if i % log_every == 0:
        print(f"loss {running_loss.item() / log_every:.4f}")   # one sync every log_every steps
        running_loss.zero_()
# to find hidden syncs: torch.cuda.set_sync_debug_mode("warn")"""

# inference: results leave the GPU without a wait per call (ROCm's PyTorch uses the same
# torch.cuda API for HIP)
CODE_INFERENCE = """\
out_cpu = torch.empty(out.shape, dtype=out.dtype, pin_memory=True)
out_cpu.copy_(out, non_blocking=True)   # no wait here: the copy is queued
done = torch.cuda.Event()
done.record()
# ... queue the next batch's work here ...
done.synchronize()                      # wait only where the result is used
# to find hidden syncs: torch.cuda.set_sync_debug_mode("warn")"""

FIX_TRAINING = ("Remove per-step synchronisation: no .item(), .cpu(), .numpy(), .tolist(), "
                "print(tensor) or tensor-valued `if` in the step; accumulate metrics on the GPU "
                "and read them every N steps; use non_blocking copies; avoid "
                "torch.cuda.synchronize() outside benchmarks.")
FIX_INFERENCE = ("Remove synchronisation inside the forward pass: no .item(), .tolist() or "
                 "tensor-valued `if` on the way (data-dependent shapes such as torch.nonzero "
                 "or boolean masks also wait); copy results out with non_blocking=True into "
                 "pinned memory and wait on an event only where they are used, so that the "
                 "next batch is queued meanwhile.")


def check(ctx: Context) -> Finding | None:
    trace = ctx.trace
    if not ctx.has_gpu:
        return None
    rt = trace.runtime
    idx = np.flatnonzero(ctx.sync_calls)
    inside = ctx.in_steps(rt.ts[idx], rt.end[idx])
    idx, inside = idx[inside > 0], inside[inside > 0]
    if len(idx) == 0:
        return None
    # an inference harness's torch.cuda.synchronize() ending each request (to read the
    # clock, to hand the result back) is the wait for the step, not the model's stall
    result = ctx.closing_synchronize(idx)
    result_ns = ctx.per_step_union(rt.ts[idx[result]], rt.end[idx[result]])
    idx, inside = idx[~result], inside[~result]
    if len(idx) == 0:
        return None
    sync_ns = ctx.per_step_union(rt.ts[idx], rt.end[idx])
    if ctx.pct(sync_ns) < THRESHOLD_PCT:
        return None
    saving = min(sync_ns, ctx.idle_per_step)
    if ctx.pct(saving) < MIN_SAVING_PCT:
        return None
    host = trace.host
    cpu_sel = host.kind == HOST_OP
    cpu_ns = ctx.per_step_union(host.ts[cpu_sel], host.end[cpu_sel])
    evidence = [
        f"{count(len(idx) / ctx.n_steps, 'synchronising call')} per step block the CPU for "
        f"{fmt_ns(sync_ns)} per step ({ctx.pct(sync_ns):.1f} % of the step"
        + (f", {100 * sync_ns / cpu_ns:.0f} % of the time the CPU spends in operators)"
           if cpu_ns > 0 else ")"),
        f"the GPU is idle {fmt_ns(ctx.idle_per_step)} per step: after each sync it waits "
        "for the CPU to queue new work",
    ]
    for name, ns, n in top_by_name(rt.name[idx], inside.astype(np.float64), trace.strings, 3):
        evidence.append(f"{name}: {count(n / ctx.n_steps, 'call')}, "
                        f"{fmt_ns(ns / ctx.n_steps)} per step")
    named = names.mask_in(trace, names.SYNC_CALLS)[rt.name[idx]]
    if not named.all():
        evidence.append(
            f"{int((~named).sum()) / ctx.n_steps:.1f} of them per step are copies to pageable "
            f"host memory ({fmt_ns(float(inside[~named].sum()) / ctx.n_steps)} per step): "
            "even an async copy call returns only when such a copy is done, after the work "
            "queued before it")
    if result_ns > 0:
        evidence.append(
            f"not counted: {fmt_ns(result_ns)} per step of torch.cuda.synchronize() ending the "
            "step outside any operator, after its last kernel launch (an inference harness "
            "waiting for the request to finish)")
    if len(trace.syncs):
        s = trace.syncs
        sin = ctx.in_steps(s.ts, s.end) > 0
        evidence.append(f"{int(sin.sum()) / ctx.n_steps:.1f} cuda_sync events per step")
    owner = ctx.a.tree.runtime_owner[idx]
    has = owner >= 0
    for name, ns, n in top_by_name(host.name[owner[has]], inside[has].astype(np.float64),
                                   trace.strings, 3):
        evidence.append(f"caused by {short(name)} ({n / ctx.n_steps:.1f}/step, "
                        f"{fmt_ns(ns / ctx.n_steps)} waiting per step)")
    return ctx.finding(
        id="host-sync", title="The CPU waits for the GPU (host-device synchronisation)",
        saving_ns=saving,
        estimate=("Time per step the CPU is blocked in synchronising calls, capped by the GPU's "
                  "idle time per step: without the syncs the CPU queues work ahead and can at "
                  "most fill the GPU's idle time."),
        evidence=evidence,
        fix=FIX_INFERENCE if ctx.premises.inference else FIX_TRAINING,
        code=CODE_INFERENCE if ctx.premises.inference else CODE,
        source_lines=ctx.source_lines(owner[has], inside[has].astype(np.float64)),
        references=("https://pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html",
                    "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
                    "#avoid-unnecessary-cpu-gpu-synchronization"),
    )
