"""Per-device GPU metrics over the step window (torch-tb-profiler definitions).

- utilization: |union of kernel intervals ∩ window| / |window|
- est. SM efficiency: Σ over elementary segments of min(Σ blocks-per-SM of running kernels, 1)
  × segment length, clipped to the window, / |window|
- est. achieved occupancy: Kineto's per-kernel estimate, weighted by duration inside the window
- Tensor Core share: kernel time of Tensor-Core kernels / all compute kernel time (kernels
  launched by an operator, communication kernels excluded), whole trace
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links
from stepscope.classify import names
from stepscope.model.trace import DEV_KERNEL, DeviceProperties, Trace


@dataclass(frozen=True)
class GpuMetrics:
    device: int
    name: str | None
    utilization_pct: float
    sm_efficiency_pct: float | None  # None when no kernel carries "blocks per SM"
    achieved_occupancy_pct: float | None  # None when no kernel carries the estimate
    tensor_core_pct: float
    kernel_ns: int  # Σ kernel durations on the device (whole trace)
    busy_ns: int  # |union of kernels ∩ window|
    window_ns: int


def sm_efficiency(ts: np.ndarray, end: np.ndarray, blocks: np.ndarray, lo: int, hi: int) -> float:
    """Σ min(Σ blocks-per-SM, 1) · length over elementary segments inside [lo, hi)."""
    ok = (blocks > 0) & (end > ts)
    if not ok.any() or hi <= lo:
        return 0.0
    edges = np.concatenate((ts[ok], end[ok]))
    delta = np.concatenate((blocks[ok].astype(np.float64), -blocks[ok].astype(np.float64)))
    order = np.argsort(edges, kind="stable")
    edges, delta = edges[order], delta[order]
    level = np.minimum(np.cumsum(delta), 1.0)
    seg_lo = np.maximum(edges[:-1], lo)
    seg_hi = np.minimum(edges[1:], hi)
    seg = np.maximum(seg_hi - seg_lo, 0)
    return float(np.sum(np.maximum(level[:-1], 0.0) * seg))


def gpu_metrics(
    trace: Trace, window: tuple[int, int], links: Links | None = None
) -> list[GpuMetrics]:
    links = links or Links(trace)
    dev = trace.device
    is_kernel = dev.kind == DEV_KERNEL
    lo, hi = window
    span = max(hi - lo, 1)
    props: dict[int, DeviceProperties] = {p.id: p for p in trace.meta.devices}
    tc = names.mask(trace, names.is_tensor_core_kernel)[dev.name]
    # communication kernels are not compute: they stay out of the Tensor Core denominator
    owned = (links.device_runtime >= 0) & ~names.mask(trace, names.is_collective_kernel)[dev.name]
    out = []
    for device in np.unique(dev.device[is_kernel]):
        sel = is_kernel & (dev.device == device)
        ts, end = dev.ts[sel], dev.end[sel]
        busy = iv.length(iv.clip(iv.union(ts, end), lo, hi))
        blocks = dev.blocks_per_sm[sel]
        has_blocks = bool(np.any(blocks > 0))
        occ = dev.occupancy_pct[sel]
        clipped = np.maximum(np.minimum(end, hi) - np.maximum(ts, lo), 0)
        occ_ok = occ >= 0
        occ_w = clipped[occ_ok].sum()
        occupancy = float((occ[occ_ok] * clipped[occ_ok]).sum() / occ_w) if occ_w > 0 else None
        kernel_time = dev.dur[sel & owned].sum()
        tc_time = dev.dur[sel & owned & tc].sum()
        prop = props.get(int(device))
        out.append(
            GpuMetrics(
                device=int(device),
                name=prop.name if prop else None,
                utilization_pct=100.0 * busy / span,
                sm_efficiency_pct=100.0 * sm_efficiency(ts, end, blocks, lo, hi) / span
                if has_blocks
                else None,
                achieved_occupancy_pct=occupancy if occ_ok.any() else None,
                tensor_core_pct=100.0 * float(tc_time) / float(kernel_time)
                if kernel_time > 0
                else 0.0,
                kernel_ns=int(dev.dur[sel].sum()),
                busy_ns=busy,
                window_ns=hi - lo,
            )
        )
    return out
