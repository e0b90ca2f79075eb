"""nsys analyze's cuda_memcpy_async: an *async* copy from or to pageable memory.

cudaMemcpyAsync on pageable host memory is staged through a bounce buffer and blocks the
calling thread like cudaMemcpy: the "async" call is synchronous. The GPU-side cost of
pageable copies is the ``pageable-memcpy`` finding; this one is the CPU time blocked in the
calls beyond the copies themselves (waiting for queued work, staging).
"""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns, top_by_name
from stepscope.advice.finding import Finding
from stepscope.advice.rules.transfers._api_ops import api_spans, is_async_copy_call, ops_by_api
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names
from stepscope.model.trace import DEV_MEMCPY

THRESHOLD_PCT = 1.0


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    trace = ctx.trace
    ops, calls = ops_by_api(ctx, DEV_MEMCPY, names.is_pageable_copy, is_async_copy_call)
    if not len(ops):
        return None
    dev = trace.device
    api = api_spans(ctx, calls)
    copies = iv.union(dev.ts[ops], dev.end[ops])
    blocked = iv.length(iv.subtract(api, copies)) / ctx.n_steps
    if ctx.pct(blocked) < THRESHOLD_PCT:
        return None
    evidence = [
        f"{len(ops) / ctx.n_steps:.1f} asynchronous copy call(s) per step on pageable memory "
        f"block the CPU {fmt_ns(iv.length(api) / ctx.n_steps)} per step, "
        f"{fmt_ns(blocked)} of it outside the copies themselves",
        f"{float(dev.bytes[ops].clip(0).sum()) / ctx.n_steps / 1e6:,.1f} MB per step copied",
    ]
    for name, ns, n in top_by_name(dev.name[ops], ctx.device_in_steps[ops],
                                   trace.strings, 3):
        evidence.append(f"{name}: {n / ctx.n_steps:.1f}/step, {fmt_ns(ns / ctx.n_steps)} "
                        "GPU time per step")
    return ctx.finding(
        id="async-memcpy-pageable",
        title="Asynchronous copies from pageable memory block the CPU",
        saving_ns=blocked,
        estimate=("CPU time per step inside cudaMemcpyAsync calls on pageable memory, minus "
                  "the copies' own GPU time: from pinned memory the call returns at once."),
        evidence=evidence,
        fix=("Allocate the host buffers page-locked (tensor.pin_memory(), "
             "DataLoader(pin_memory=True), cudaHostAlloc/cudaMallocHost) so that "
             "cudaMemcpyAsync is really asynchronous."),
        code="x = x.pin_memory()\nx_gpu = x.to(device, non_blocking=True)",
        references=("https://docs.nvidia.com/nsight-systems/UserGuide/index.html"
                    "#cuda-async-memcpy-with-pageable-memory",),
    )
