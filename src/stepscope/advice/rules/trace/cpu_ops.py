"""Rule 12: operators running on the CPU in a GPU job, while the GPU waits."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.advice.rules.trace._opshare import optimizer_note
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names
from stepscope.units import count

THRESHOLD_PCT = 5.0  # CPU-only operator time while the GPU is idle, % of the step


def _idle_per_step(ctx: Context, rows: npt.NDArray[np.int64]) -> float:
    """Steady-state GPU idle time per step under the host rows ``rows`` (their union)."""
    host = ctx.trace.host
    return iv.length(iv.intersect(iv.union(host.ts[rows], host.end[rows]),
                                  ctx.steady_idle)) / ctx.n_steps


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    trace, t = ctx.trace, ctx.times
    host = trace.host
    parent = ctx.a.tree.effective_parent
    no_gpu = t.is_operator & (t.device_total == 0)
    outer = no_gpu & ~((parent >= 0) & no_gpu[np.maximum(parent, 0)])
    # views (and their autograd nodes), detach, empty* and metadata ops launch nothing on
    # any device: "run them on the GPU" cannot apply; their host cost between launches is
    # dispatch overhead (launch-bound, gpu-gaps)
    outer &= ~names.mask(trace, names.launches_nothing)[host.name]
    # collectives (c10d::allgather_, record_param_comms) wait for peers or run on the
    # backend's own threads (gloo on the CPU): communication, which the communication rules
    # size; "run them on the GPU" is not their fix
    outer &= ~names.mask(trace, names.is_collective_host)[host.name]
    # data loading has its own rule (input-pipeline); JIT compilation is warm-up (its
    # tracing runs operators on the CPU, which no device could take over)
    outer &= ~(ctx.loader_rows | ctx.in_loader | ctx.compile_rows | ctx.in_compile)
    # an optimizer step's CPU-only operators (an unfused Adam's step counters and bias
    # corrections on CPU tensors: item, pow, rsub, copy_) are the optimizer's, which a fused
    # or foreach optimizer removes (unfused-optimizer); "run them on the GPU" is not the fix
    opt_ns = _idle_per_step(ctx, np.flatnonzero(outer & ctx.in_optimizer))
    outer &= ~ctx.in_optimizer
    # and GPU idle time during a first call or launch (Context.warm_up_idle) is warm-up too
    idx = np.flatnonzero(outer)
    idle = iv.measure_in(ctx.steady_idle, host.ts[idx], host.end[idx]).astype(np.float64)
    idx, idle = idx[idle > 0], idle[idle > 0]
    if len(idx) == 0:
        return None
    ns = _idle_per_step(ctx, idx)
    if ctx.pct(ns) < THRESHOLD_PCT:
        return None
    evidence = [f"CPU-only operators run {fmt_ns(ns)} per step while the GPU is idle"]
    evidence += [f"{short(n)}: {fmt_ns(w / ctx.n_steps)} per step with the GPU idle "
                 f"({count(c / ctx.n_steps, 'call')})"
                 for n, w, c in top_by_name(host.name[idx], idle, trace.strings, 5)]
    evidence += optimizer_note(opt_ns, "CPU-only operators")
    return ctx.finding(
        id="cpu-ops-in-gpu-job", title="Operators run on the CPU between GPU work",
        saving_ns=ns,
        estimate=("Time per step of operators that launch no GPU work, measured while the GPU is "
                  "idle: on the GPU (or off the critical path) they would at most save all of it."),
        evidence=evidence,
        fix=("Run these operators on the GPU (create tensors with device=..., keep masks/indices "
             "on the GPU), compute constant tensors once outside the loop, or move CPU work into "
             "DataLoader workers."),
        code=("# not torch.arange(n) on the CPU:\n"
              "mask = torch.arange(n, device=x.device) < lengths[:, None]"),
        source_lines=ctx.source_lines(idx, idle),
        references=("https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
                    "#create-tensors-directly-on-the-target-device",),
    )
