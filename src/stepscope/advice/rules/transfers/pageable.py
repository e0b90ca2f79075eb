"""Rule 5: host-to-device copies from pageable (not pinned) host memory."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names
from stepscope.model.trace import DEV_MEMCPY
from stepscope.units import format_bytes

THRESHOLD_PCT = 0.5  # of the step



def check(ctx: Context) -> Finding | None:
    trace = ctx.trace
    dev = trace.device
    pageable = names.mask(trace, names.is_pageable_copy)[dev.name]
    # copies in the steps: every figure below is over the window of the saving
    sel = (dev.kind == DEV_MEMCPY) & pageable & ctx.device_sel & (ctx.device_in_steps > 0)
    if not sel.any():
        return None
    copies = ctx.device_union(sel)
    copy_ns = iv.length(copies) / ctx.n_steps
    exposed = iv.length(iv.subtract(copies, ctx.kernel_busy)) / ctx.n_steps
    rt = ctx.a.links.device_runtime[sel]
    rt = rt[rt >= 0]
    api_ns = ctx.per_step_union(trace.runtime.ts[rt], trace.runtime.end[rt]) if len(rt) else 0.0
    saving = exposed  # pinned + non_blocking lets the copy overlap compute
    if ctx.pct(saving) < THRESHOLD_PCT:
        return None
    n = int(np.count_nonzero(ctx.in_steps(dev.ts[sel], dev.end[sel]) > 0))
    nbytes = dev.bytes[sel]
    evidence = [f"{n / ctx.n_steps:.1f} pageable copies per step, {fmt_ns(copy_ns)} of copy "
                f"time per step on the GPU, {fmt_ns(exposed)} of it with no kernel running"]
    if (nbytes > 0).any():
        evidence.append(f"{format_bytes(float(nbytes[nbytes > 0].sum()) / ctx.n_steps)} per step "
                        "staged through a bounce buffer")
    if api_ns:
        evidence.append(f"the host call issuing them blocks the CPU {fmt_ns(api_ns)} per step "
                        "(an async copy from pageable memory is synchronous)")
    owner = ctx.a.tree.device_owner[sel]
    ok = owner >= 0
    return ctx.finding(
        id="pageable-memcpy", title="Host-to-device copies from pageable memory",
        saving_ns=saving,
        estimate=("GPU time per step of the pageable copies while no kernel runs: from pinned "
                  "memory with non_blocking=True they overlap with compute."),
        evidence=evidence,
        fix=("Copy from page-locked memory, asynchronously: DataLoader(pin_memory=True) and "
             ".to(device, non_blocking=True) (or tensor.pin_memory() for your own buffers)."),
        code="loader = DataLoader(dataset, ..., pin_memory=True)\n"
             "for x, y in loader:\n"
             "    x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)",
        source_lines=ctx.source_lines(owner[ok], ctx.device_in_steps[sel][ok]),
        references=("https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html",
                    "https://docs.nvidia.com/nsight-systems/UserGuide/index.html#cuda-memcpy-async"),
    )
