"""Per-step GPU time of each kernel: the samples behind a kernel's significance test in a diff."""

from __future__ import annotations

import numpy as np

from stepscope.analysis.steps import Steps
from stepscope.model.trace import DEV_KERNEL, Trace


def kernel_step_series(trace: Trace, steps: Steps) -> dict[str, tuple[float, ...]]:
    """Kernel name -> µs of that kernel's calls starting inside each step (in step order)."""
    dev = trace.device
    sel = np.flatnonzero(dev.kind == DEV_KERNEL)
    n = len(steps.steps)
    if len(sel) == 0 or n == 0:
        return {}
    starts = np.array([s.start for s in steps.steps], dtype=np.int64)
    ends = np.array([s.end for s in steps.steps], dtype=np.int64)
    ts = dev.ts[sel]
    k = np.searchsorted(starts, ts, side="right") - 1
    kc = np.maximum(k, 0)
    inside = (k >= 0) & (ts < ends[kc])
    if not inside.any():
        return {}
    uniq, inverse = np.unique(dev.name[sel][inside], return_inverse=True)
    cell = inverse.astype(np.int64) * n + k[inside]
    us = np.bincount(cell, weights=dev.dur[sel][inside] / 1000.0, minlength=len(uniq) * n)
    grid = us.reshape(len(uniq), n)
    return {
        trace.strings[int(uniq[i])]: tuple(round(float(v), 3) for v in grid[i])
        for i in range(len(uniq))
    }
