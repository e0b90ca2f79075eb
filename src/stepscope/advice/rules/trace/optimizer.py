"""Rule 9: an unfused optimizer: many small per-parameter kernels in optimizer.step()."""

from __future__ import annotations

import re

import numpy as np

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names
from stepscope.model.trace import DEV_KERNEL, HOST_PYTHON

MIN_KERNELS = 50  # kernels per optimizer step
MIN_PCT = 2.0  # optimizer.step wall time, % of the step
# torch.optim (https://pytorch.org/docs/stable/optim.html#algorithms): fused GPU kernels for
# Adam, AdamW and SGD (CUDA and ROCm; Adagrad's fused path is CPU only); foreach
# (multi-tensor) for these. PyTorch >= 2.0 picks foreach by default when every parameter
# is a plain CUDA tensor, so an unfused step means foreach=False, a parameter that is not
# one, or an older PyTorch.
FUSED = frozenset({"Adam", "AdamW", "SGD"})
FOREACH = frozenset({"Adadelta", "Adagrad", "Adam", "AdamW", "Adamax", "ASGD", "NAdam",
                     "RAdam", "RMSprop", "Rprop", "SGD"})
_CLASS = re.compile(r"Optimizer\.step#(\w+)\.step")


def _fix(ctx: Context, range_name: str) -> tuple[str, str]:
    """(fix text, code) for the optimizer class named by its range, on this vendor."""
    m = _CLASS.match(range_name)
    cls = m.group(1) if m else ""
    if ctx.premises.vendor not in ("nvidia", "amd"):
        return ("Launch the optimizer's math in a few kernels: PyTorch's fused and foreach "
                "optimizer kernels are for CUDA/ROCm, so on this device use what its backend "
                "provides, or compile the step with torch.compile.",
                "opt_step = torch.compile(optimizer.step)\nopt_step()")
    default = ("PyTorch ≥ 2.0 uses foreach by default when every parameter is a plain CUDA "
               "tensor: an unfused step means foreach=False was set, a parameter is not one, "
               "or an older PyTorch.")
    if cls in FUSED:
        return (f"Use the fused implementation (one kernel for all parameters): "
                f"torch.optim.{cls}(..., fused=True), or foreach=True. " + default,
                f"optimizer = torch.optim.{cls}(model.parameters(), lr=lr, fused=True)")
    if cls in FOREACH:
        return (f"Use the foreach (multi-tensor) implementation: torch.optim.{cls}(..., "
                f"foreach=True); {cls} has no fused GPU kernel. " + default,
                f"optimizer = torch.optim.{cls}(model.parameters(), lr=lr, foreach=True)")
    return ("Use a fused (single kernel) or foreach (multi-tensor) optimizer "
            "(torch.optim's Adam/AdamW/SGD accept fused=True), or compile the step with "
            "torch.compile.",
            "optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)")



def check(ctx: Context) -> Finding | None:
    trace = ctx.trace
    host, dev = trace.host, trace.device
    is_step = names.mask(trace, names.is_optimizer_step)[host.name]
    idx = np.flatnonzero(is_step & (host.kind != HOST_PYTHON))
    idx = idx[ctx.in_steps(host.ts[idx], host.end[idx]) > 0]
    if len(idx) == 0:
        return None
    opt_u = iv.intersect(iv.union(host.ts[idx], host.end[idx]), ctx.window)
    wall = ctx.per_step_union(host.ts[idx], host.end[idx])
    if ctx.pct(wall) < MIN_PCT:
        return None
    # kernels launched from inside optimizer.step
    launch_ts = ctx.launch_ts
    inside = ((ctx.a.links.device_runtime >= 0)
              & (iv.measure_in(opt_u, launch_ts, launch_ts + 1) > 0) & (dev.kind == DEV_KERNEL))
    kernels = int(inside.sum()) / len(idx)
    if kernels < MIN_KERNELS:
        return None
    ops = ctx.operators_within(opt_u)
    op_names = {trace.strings[i] for i in np.unique(host.name[ops]).tolist()}
    if any("_foreach_" in n or "_fused_" in n for n in op_names):
        return None
    k_ns = ctx.per_step_union(dev.ts[inside], dev.end[inside])
    idle_in_opt = iv.length(iv.intersect(opt_u, ctx.idle)) / ctx.n_steps
    saving = min(max(wall - k_ns, 0.0), idle_in_opt)
    names_ = sorted({trace.strings[i] for i in np.unique(host.name[idx]).tolist()})
    evidence = [
        f"{short(names_[0])}: {fmt_ns(wall)} per step ({ctx.pct(wall):.1f} %), "
        f"{kernels:,.0f} kernels per call, {fmt_ns(k_ns)} of them busy on the GPU; "
        f"the GPU is idle {fmt_ns(idle_in_opt)} of it",
        "no _foreach_/_fused_ operators inside: one kernel per parameter and operation",
    ]
    evidence += [f"{short(n)} ×{c / ctx.n_steps:,.0f} per step" for n, _, c in
                 top_by_name(host.name[ops], ctx.times.host_total[ops], trace.strings, 3)]
    fix, code = _fix(ctx, names_[0])
    return ctx.finding(
        id="unfused-optimizer", title="Unfused optimizer: one small kernel per parameter",
        saving_ns=saving,
        estimate=("optimizer.step() wall time per step minus the GPU time of its kernels: a "
                  "fused/foreach optimizer does the same math in a few kernels, so at most the "
                  "launch overhead disappears, and only where the GPU is idle meanwhile."),
        evidence=evidence,
        fix=fix,
        code=code,
        references=("https://pytorch.org/docs/stable/optim.html#algorithms",),
    )
