"""Temporal breakdown of GPU time (Holistic Trace Analysis' definition, minus its bugs).

Over the GPU-active span (first device op start to last device op end):
idle = span - |union of device ops|; compute = |union of computation kernels|;
non-compute = span - idle - compute (busy with only memory or communication work).
Unlike HTA, cuda_sync events are not counted as busy device time, and times are exact
nanoseconds (HTA rounds sub-µs events, which can make durations negative).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links, gather
from stepscope.classify import names
from stepscope.model.trace import DEV_KERNEL, Trace


@dataclass(frozen=True)
class Temporal:
    rank: int
    span_ns: int
    idle_ns: int
    compute_ns: int
    non_compute_ns: int

    def pct(self, value: int) -> float:
        return 100.0 * value / self.span_ns if self.span_ns else 0.0


def computation_mask(trace: Trace) -> npt.NDArray[np.bool_]:
    dev = trace.device
    coll = names.mask(trace, names.is_collective_kernel)[dev.name]
    mem_named = names.mask(trace, names.is_memory_op_name)[dev.name]
    out: npt.NDArray[np.bool_] = (dev.kind == DEV_KERNEL) & ~coll & ~mem_named
    return out


def temporal_breakdown(
    trace: Trace, launched_before: int | None = None, links: Links | None = None
) -> Temporal | None:
    """None when the trace has no device activity (CPU-only).

    ``launched_before`` keeps only device work whose runtime call started before that
    time: HTA's default scope (work launched up to the end of the last ProfilerStep).
    """
    dev = trace.device
    keep = np.ones(len(dev), dtype=bool)
    if launched_before is not None:
        rt = (links or Links(trace)).device_runtime
        keep = (rt >= 0) & (gather(trace.runtime.ts, rt, 0) < launched_before)
    if not keep.any():
        return None
    busy = iv.union(dev.ts[keep], dev.end[keep])
    if len(busy[0]) == 0:
        return None
    span = int(busy[1][-1] - busy[0][0])
    comp = computation_mask(trace) & keep
    compute = iv.length(iv.union(dev.ts[comp], dev.end[comp]))
    idle = span - iv.length(busy)
    return Temporal(trace.meta.rank or 0, span, idle, compute, span - idle - compute)
