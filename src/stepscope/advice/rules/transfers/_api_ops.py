"""Device ops joined to the CUDA API call that issued them (for the nsys analyze rules)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from stepscope.advice.context import Context
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names

I64 = npt.NDArray[np.int64]


def ops_by_api(ctx: Context, kind: int, op_name: Callable[[str], object],
               api_name: Callable[[str], object]) -> tuple[I64, I64]:
    """(device op indices, their API call indices) of ``kind`` ops on the main GPU whose
    name satisfies ``op_name`` and whose issuing call's name satisfies ``api_name``."""
    trace = ctx.trace
    dev, rt = trace.device, trace.runtime
    rt_idx = ctx.a.links.device_runtime
    sel = (dev.kind == kind) & ctx.device_sel & (rt_idx >= 0)
    sel &= names.mask(trace, op_name)[dev.name]
    ops = np.flatnonzero(sel)
    calls = rt_idx[ops]
    ok = names.mask(trace, api_name)[rt.name[calls]]
    # calls in the steps only: counts and times over the same window as the saving
    ok &= ctx.in_steps(rt.ts[calls], rt.end[calls]) > 0
    return ops[ok], calls[ok]


def api_spans(ctx: Context, calls: I64) -> iv.Union:
    """The time the API calls ``calls`` run, merged, inside the steps."""
    rt = ctx.trace.runtime
    return iv.intersect(iv.union(rt.ts[calls], rt.end[calls]), ctx.window)


def sync_saving(ctx: Context, calls: I64) -> tuple[float, float]:
    """(CPU ns per step blocked in the synchronous calls ``calls``, the saving: that time
    capped by the GPU's idle time per step, the most queueing ahead could fill)."""
    api_ns = iv.length(api_spans(ctx, calls)) / ctx.n_steps
    return api_ns, min(api_ns, ctx.idle_per_step)


def is_async_copy_call(name: str) -> bool:
    return "Memcpy" in name and "Async" in name


def is_sync_copy_call(name: str) -> bool:
    return name.startswith(("cudaMemcpy", "cuMemcpy")) and "Async" not in name


def is_sync_memset_call(name: str) -> bool:
    return name.startswith(("cudaMemset", "cuMemset")) and "Async" not in name


def is_pageable_or_pinned_memset(name: str) -> bool:
    """Memsets of pinned or managed memory (the ones nsys' cuda_memset_sync reports)."""
    return name in ("Memset (Pinned)", "Memset (Managed)")


def is_memcpy_name(name: str) -> bool:
    return name.startswith("Memcpy")

