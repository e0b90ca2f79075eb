"""Operator statistics grouped by (name, call stack): torch-tb-profiler's "group by call stack".

Same per-node times as the operator view (``OpTree.times``); only the grouping key differs.
Rows without a recorded stack (traces taken without ``with_stack``) group by name alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.optree import OpTree
from stepscope.grouping import unique_pairs
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class StackRow:
    name: str
    call_stack: str | None  # frames separated by ';' as the trace wrote them
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float


def operators_by_stack(trace: Trace, tree: OpTree) -> list[StackRow]:
    """Rows sorted by device self time (GPU traces) or host self time, longest first."""
    times = tree.times
    idx = np.flatnonzero(times.is_operator)
    if len(idx) == 0:
        return []
    n = np.int64(len(trace.strings) + 1)
    # the distinct (name, stack) pairs, as np.unique over name * n + stack + 1 orders them
    # (grouping.unique_pairs: two table passes instead of sorting a million keys)
    names_u, stacks_u, inv = unique_pairs(trace.host.name[idx],
                                          trace.host.call_stack[idx].astype(np.int64) + 1)
    ukey = names_u * n + stacks_u
    m = len(ukey)

    def total(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = np.bincount(
            inv, weights=values[idx], minlength=m).astype(np.float64)
        return out

    calls = np.bincount(inv, minlength=m)
    hs, ht = total(times.host_self), total(times.host_total)
    ds, dt = total(times.device_self), total(times.device_total)
    primary = ds if trace.has_gpu else hs
    order = np.lexsort((ukey, -hs, -primary))
    rows = []
    for i in order.tolist():  # one row per distinct (name, stack), not per event
        stack = int(ukey[i] % n) - 1
        rows.append(StackRow(
            name=trace.name(int(ukey[i] // n)),
            call_stack=trace.name(stack) if stack >= 0 else None,
            calls=int(calls[i]), host_self_us=float(hs[i]) / 1000.0,
            host_total_us=float(ht[i]) / 1000.0, device_self_us=float(ds[i]) / 1000.0,
            device_total_us=float(dt[i]) / 1000.0))
    return rows
