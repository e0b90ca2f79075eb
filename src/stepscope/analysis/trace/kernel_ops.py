"""Kernel time by (kernel, launching operator): torch-tb-profiler's "Kernel + Op" grouping.

A kernel's operator is the innermost host operator that issued its launch (after folding
same-name single children, as the operator view does); kernels with no such operator are
grouped under ``(no operator)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.trace.kernels import group_durations
from stepscope.model.trace import DEV_KERNEL, Trace

NO_OPERATOR = "(no operator)"


@dataclass(frozen=True)
class KernelOpRow:
    kernel: str
    operator: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float


def kernels_by_operator(trace: Trace, tree: OpTree) -> list[KernelOpRow]:
    """Rows sorted by total time, longest first."""
    dev = trace.device
    sel = np.flatnonzero(dev.kind == DEV_KERNEL)
    if len(sel) == 0:
        return []
    owner = tree.device_owner[sel]
    op = np.full(len(sel), -1, np.int64)  # -1: no operator (also when there are no host ops)
    owned = owner >= 0
    op[owned] = trace.host.name[owner[owned]]
    key = (dev.name[sel].astype(np.int64) << 32) | (op & 0xFFFFFFFF)
    uniq, inv = np.unique(key, return_inverse=True)
    dur = dev.dur[sel].astype(np.float64)
    m = len(uniq)
    total, calls, mins, maxs = group_durations(inv, dur, m)
    order = np.lexsort((uniq, -total))
    rows = []
    for i in order.tolist():  # one row per distinct (kernel, operator) pair, not per event
        k = int(uniq[i])
        op_id = k & 0xFFFFFFFF
        op_id = op_id - (1 << 32) if op_id >= 1 << 31 else op_id
        rows.append(KernelOpRow(
            kernel=trace.name(k >> 32), operator=trace.name(op_id) if op_id >= 0 else NO_OPERATOR,
            calls=int(calls[i]), total_us=float(total[i]) / 1000.0,
            mean_us=float(total[i]) / int(calls[i]) / 1000.0, min_us=float(mins[i]) / 1000.0,
            max_us=float(maxs[i]) / 1000.0))
    return rows
