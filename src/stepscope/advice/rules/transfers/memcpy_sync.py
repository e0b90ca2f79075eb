"""nsys analyze's cuda_memcpy_sync: synchronous cudaMemcpy calls.

A synchronous copy waits for all earlier work on the device and blocks the CPU until the
copy is done, so the CPU cannot queue work ahead. Like nsys, host-to-device copies of at
most 64 000 bytes are ignored (the driver stages them and returns quickly).
"""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns, top_by_name
from stepscope.advice.finding import Finding
from stepscope.advice.rules.transfers._api_ops import (
    is_memcpy_name,
    is_sync_copy_call,
    ops_by_api,
    sync_saving,
)
from stepscope.model.trace import DEV_MEMCPY
from stepscope.units import count

SMALL_HTOD_BYTES = 64_000
THRESHOLD_PCT = 1.0


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    trace = ctx.trace
    dev, rt = trace.device, trace.runtime
    ops, calls = ops_by_api(ctx, DEV_MEMCPY, is_memcpy_name, is_sync_copy_call)
    if len(ops):
        htod = np.array(["HtoD" in trace.strings[n] for n in dev.name[ops]], dtype=bool)
        keep = ~(htod & (dev.bytes[ops] <= SMALL_HTOD_BYTES))
        ops, calls = ops[keep], calls[keep]
    if not len(ops):
        return None
    api_ns, saving = sync_saving(ctx, calls)
    if ctx.pct(saving) < THRESHOLD_PCT:
        return None
    evidence = [f"{count(len(ops) / ctx.n_steps, 'synchronous copy call')} per step block the "
                f"CPU {fmt_ns(api_ns)} per step"]
    for name, ns, n in top_by_name(rt.name[calls],
                                   ctx.in_steps(rt.ts[calls], rt.end[calls]).astype(np.float64),
                                   trace.strings, 3):
        evidence.append(f"{name}: {n / ctx.n_steps:.1f}/step, {fmt_ns(ns / ctx.n_steps)} per step")
    return ctx.finding(
        id="sync-memcpy", title="Synchronous memory copies stall the CPU",
        saving_ns=saving,
        estimate=("CPU time per step in synchronous copy calls, capped by the GPU's idle "
                  "time per step (the most the CPU could fill by queueing work ahead)."),
        evidence=evidence,
        fix=("Use cudaMemcpyAsync on a stream with pinned host memory (in PyTorch: "
             ".to(device, non_blocking=True) from pinned tensors) and synchronise only "
             "where the result is needed."),
        references=("https://docs.nvidia.com/nsight-systems/UserGuide/index.html"
                    "#cuda-synchronous-memcpy",),
    )
