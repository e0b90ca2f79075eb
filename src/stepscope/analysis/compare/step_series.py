"""Per-step time of each kernel and operator: the samples behind their significance tests in
a diff.

A call belongs to the step it starts in, [step.start, step.end), for kernels and operators
alike; calls starting outside every analysed step (warm-up, dropped tail) are in no sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from stepscope.analysis.compare.diff import Series
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.events.steps import Steps
from stepscope.analysis.trace.operators import decode_operator_keys, operator_keys, operator_label
from stepscope.model.trace import DEV_KERNEL, Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
OperatorKey = tuple[str, str | None]  # (name, input shape); shape None in by-name tables


@dataclass(frozen=True)
class OperatorSeries:
    """One operator's µs per step: host inclusive time and GPU time of what it launched."""

    host: Series
    device: Series


@dataclass(frozen=True)
class StepSeries:
    """Everything per step a diff tests beyond step time and categories."""

    kernels: dict[str, Series] = field(default_factory=dict)
    operators: dict[OperatorKey, OperatorSeries] = field(default_factory=dict)
    operators_by_shape: dict[OperatorKey, OperatorSeries] = field(default_factory=dict)


def step_index(steps: Steps, ts: I64) -> I64:
    """The step each start time falls in, [start, end); -1 outside every step."""
    starts = np.array([s.start for s in steps.steps], dtype=np.int64)
    ends = np.array([s.end for s in steps.steps], dtype=np.int64)
    k = np.searchsorted(starts, ts, side="right") - 1
    inside = (k >= 0) & (ts < ends[np.maximum(k, 0)])
    out: I64 = np.where(inside, k, -1)
    return out


def _sums(key: I64, step: I64, values: Sequence[I64 | F64], n: int) -> tuple[I64, list[F64]]:
    """Distinct keys of the calls inside a step and, per value array (ns), a (keys, n) grid
    of µs: one bincount over (key, step) cells, no loop over calls."""
    inside = step >= 0
    uniq, inverse = np.unique(key[inside], return_inverse=True)
    cell = inverse.reshape(-1).astype(np.int64) * n + step[inside]
    grids = [
        np.asarray(
            np.bincount(cell, weights=v[inside] / 1000.0, minlength=len(uniq) * n),
            dtype=np.float64,
        ).reshape(-1, n)
        for v in values
    ]
    return uniq, grids


def _rows(grid: F64) -> list[Series]:
    return [tuple(row) for row in np.round(grid, 3).tolist()]


def kernel_step_series(trace: Trace, steps: Steps) -> dict[str, Series]:
    """Kernel name -> µs of that kernel's calls starting inside each step (in step order)."""
    dev = trace.device
    sel = np.flatnonzero(dev.kind == DEV_KERNEL)
    if len(sel) == 0 or not steps.steps:
        return {}
    names = dev.name[sel].astype(np.int64)
    uniq, (grid,) = _sums(names, step_index(steps, dev.ts[sel]), [dev.dur[sel]], len(steps.steps))
    return {trace.strings[int(u)]: s for u, s in zip(uniq, _rows(grid), strict=True)}


def operator_step_series(
    trace: Trace, steps: Steps, tree: OpTree
) -> tuple[dict[OperatorKey, OperatorSeries], dict[OperatorKey, OperatorSeries]]:
    """Per step, each operator's host total and device total (the figures of its row in
    ``operator_stats``) over its calls starting in the step: by name, and by name and shape.
    """
    times = tree.times
    idx = np.flatnonzero(times.is_operator)
    if len(idx) == 0 or not steps.steps:
        return {}, {}
    step = step_index(steps, trace.host.ts[idx])
    values = [times.host_total[idx], times.device_total[idx]]

    def table(by_shape: bool) -> dict[OperatorKey, OperatorSeries]:
        key = operator_keys(trace, idx, by_shape=by_shape)
        uniq, (host, device) = _sums(key, step, values, len(steps.steps))
        labels = (operator_label(trace, ids, by_shape=by_shape)
                  for ids in decode_operator_keys(trace, uniq))
        return {
            label: OperatorSeries(h, d)
            for label, h, d in zip(labels, _rows(host), _rows(device), strict=True)
        }

    return table(False), table(True)


def step_series(trace: Trace, steps: Steps, tree: OpTree) -> StepSeries:
    by_name, by_shape = operator_step_series(trace, steps, tree)
    return StepSeries(kernel_step_series(trace, steps), by_name, by_shape)
