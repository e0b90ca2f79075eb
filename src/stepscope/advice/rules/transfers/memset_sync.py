"""nsys analyze's cuda_memset_sync: synchronous cudaMemset on pinned or managed memory.

cudaMemset (without Async) on such memory synchronises with the device and blocks the CPU.
"""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.advice.rules.transfers._api_ops import (
    is_pageable_or_pinned_memset,
    is_sync_memset_call,
    ops_by_api,
    sync_saving,
)
from stepscope.model.trace import DEV_MEMSET
from stepscope.units import count

THRESHOLD_PCT = 1.0


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    trace = ctx.trace
    ops, calls = ops_by_api(ctx, DEV_MEMSET, is_pageable_or_pinned_memset, is_sync_memset_call)
    if not len(ops):
        return None
    api_ns, saving = sync_saving(ctx, calls)
    if ctx.pct(saving) < THRESHOLD_PCT:
        return None
    kinds = sorted({trace.strings[n] for n in trace.device.name[ops]})
    return ctx.finding(
        id="sync-memset", title="Synchronous memsets of pinned or managed memory",
        saving_ns=saving,
        estimate=("CPU time per step in synchronous cudaMemset calls, capped by the GPU's "
                  "idle time per step."),
        evidence=[f"{count(len(ops) / ctx.n_steps, 'cudaMemset call')} per step "
                  f"({', '.join(kinds)}) block the CPU {fmt_ns(api_ns)} per step",
                  f"{int(np.count_nonzero(trace.device.bytes[ops] > 0))} of them with a size"],
        fix="Use cudaMemsetAsync on the stream that uses the memory.",
        references=("https://docs.nvidia.com/nsight-systems/UserGuide/index.html"
                    "#cuda-synchronous-memset",),
    )
