"""Per-step time of each kernel and operator: the samples behind their significance tests in
a diff.

A call belongs to the step it starts in, [step.start, step.end): a kernel by its start on
the GPU, an operator's host time by the call's start on the host, and an operator's GPU time
(the device work it and its children launched) by where that work starts on the GPU, like
the kernel table and the step's GPU categories. The same GPU work thus lands in the same
step in every table, so equal work gives equal samples and the same verdict (an operator's
copies and the Memcpy category, say), rather than being shifted by the launch-to-run delay
across a step boundary. Calls starting outside every analysed step (warm-up, dropped tail)
are in no sample.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from stepscope.analysis.compare.diff import Series
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.events.steps import Steps, step_index
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


@dataclass(frozen=True)
class _DeviceRows:
    owner: I64  # an operator call above a device op (one row per (device op, ancestor))
    dur: F64  # that device op's duration, ns


def _device_cells(trace: Trace, steps: Steps, tree: OpTree) -> tuple[I64, _DeviceRows]:
    """(step, (ancestor operator call, duration)) for every device op inside a step and every
    operator call whose device_total includes it (its launcher and the launcher's ancestors,
    as ``OpTree.roll_up`` adds them)."""
    dev = trace.device
    step = step_index(steps, dev.ts)
    owner = tree.device_owner
    sel = np.flatnonzero((owner >= 0) & (step >= 0))
    live = ~tree.folded & (tree.depth >= 0)
    eff = tree.effective_parent
    cur, steps_out, owners, durs = owner[sel], [], [], []
    d_step, d_dur = step[sel], dev.dur[sel].astype(np.float64)
    while len(cur):
        steps_out.append(d_step)
        owners.append(cur)
        durs.append(d_dur)
        up = np.where(live[cur], eff[cur], -1)
        keep = up >= 0
        cur, d_step, d_dur = up[keep], d_step[keep], d_dur[keep]
    if not owners:
        e = np.zeros(0, dtype=np.int64)
        return e, _DeviceRows(e, np.zeros(0))
    return (np.concatenate(steps_out).astype(np.int64),
            _DeviceRows(np.concatenate(owners).astype(np.int64), np.concatenate(durs)))


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
    dev_step, dev_rows = _device_cells(trace, steps, tree)

    def table(by_shape: bool) -> dict[OperatorKey, OperatorSeries]:
        key = operator_keys(trace, idx, by_shape=by_shape)
        uniq, (host,) = _sums(key, step, [times.host_total[idx]], len(steps.steps))
        # GPU time: each device op's duration, in the step it starts in, to every operator
        # call above it (the calls whose device_total includes it)
        full = np.full(len(trace.host), -1, dtype=np.int64)
        full[idx] = key
        dkey = full[dev_rows.owner]
        pos = np.searchsorted(uniq, dkey)
        ok = (pos < len(uniq)) & (uniq[np.minimum(pos, len(uniq) - 1)] == dkey) & (dkey >= 0)
        n = len(steps.steps)
        device = np.bincount(pos[ok] * n + dev_step[ok], weights=dev_rows.dur[ok] / 1000.0,
                             minlength=len(uniq) * n).astype(np.float64).reshape(-1, n)
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
