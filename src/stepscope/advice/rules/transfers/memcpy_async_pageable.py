"""nsys analyze's cuda_memcpy_async: an *async* copy from or to pageable memory.

cudaMemcpyAsync on pageable host memory is staged through a bounce buffer and blocks the
calling thread like cudaMemcpy: the "async" call is synchronous. The GPU-side cost of
pageable copies is the ``pageable-memcpy`` finding; this one is the CPU time blocked in the
calls beyond the copies themselves (staging through the bounce buffer).

A device-to-pageable copy is different: CUDA documents that cudaMemcpyAsync to pageable host
memory "will return only once the copy has completed", and the copy starts only after the
work queued before it on its stream. The call's time before its copy starts is therefore a
wait for the GPU, which pinning does not remove (PyTorch's blocking ``.cpu()``/``.item()``
then waits in cudaStreamSynchronize instead): that part is a synchronisation, reported by
``host-sync`` (``Context.sync_calls``), and is not counted here.
"""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns, top_by_name
from stepscope.advice.finding import Finding
from stepscope.advice.rules.transfers._api_ops import api_spans, is_async_copy_call, ops_by_api
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names
from stepscope.model.trace import DEV_MEMCPY
from stepscope.units import count, format_bytes

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
    rt = trace.runtime
    d2h = names.mask(trace, names.is_dtoh_pageable)[dev.name[ops]]
    # a DtoH call waits for the stream's earlier work before its copy starts: a sync
    waits = iv.intersect(iv.union(rt.ts[calls[d2h]], dev.ts[ops[d2h]]), ctx.window)
    wait_ns = iv.length(iv.subtract(waits, copies)) / ctx.n_steps
    blocked = iv.length(iv.subtract(iv.subtract(api, copies), waits)) / ctx.n_steps
    if ctx.pct(blocked) < THRESHOLD_PCT:
        return None
    evidence = [
        f"{count(len(ops) / ctx.n_steps, 'asynchronous copy call')} per step on pageable "
        "memory "
        f"block the CPU {fmt_ns(iv.length(api) / ctx.n_steps)} per step, "
        f"{fmt_ns(blocked)} of it outside the copies themselves"
        + (f" and outside the {fmt_ns(wait_ns)} per step that device-to-host calls wait for "
           "earlier GPU work (a synchronisation: host-sync)" if wait_ns > 0 else ""),
        f"{format_bytes(float(dev.bytes[ops].clip(0).sum()) / ctx.n_steps)} per step copied",
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
                  "the copies' own GPU time and the wait of device-to-host calls for "
                  "earlier work: from pinned memory the call returns at once."),
        evidence=evidence,
        fix=("Allocate the host buffers page-locked (tensor.pin_memory(), "
             "DataLoader(pin_memory=True), cudaHostAlloc/cudaMallocHost) so that "
             "cudaMemcpyAsync is really asynchronous."),
        code="x = x.pin_memory()\nx_gpu = x.to(device, non_blocking=True)",
        references=("https://docs.nvidia.com/nsight-systems/UserGuide/index.html"
                    "#cuda-async-memcpy-with-pageable-memory",),
    )
