"""Operator statistics: calls, host self/total, device self/total, by name (and shape).

Definitions as torch-tb-profiler (and PyTorch's ``key_averages``): host total = duration;
host self = duration - direct children - own runtime calls; device self = duration of
kernels/memcpys/memsets launched by the operator's own runtime calls; device total = self
plus all descendants'. Device times are sums (concurrent kernels count fully).
Unlike them, a row's totals count a call nested in a call of the same row (recursion,
``aten::copy_`` inside ``aten::copy_``) once, through its outermost call: a total never
exceeds the time the operator was running (docs/metrics.md, Operators).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import Links
from stepscope.analysis.events.optree import OpTree
from stepscope.classify import names
from stepscope.grouping import unique_pairs
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class OperatorRow:
    name: str
    input_shape: str | None
    calls: int
    host_self_us: float
    host_total_us: float
    device_self_us: float
    device_total_us: float
    tc_eligible: bool


def operator_keys(trace: Trace, idx: I64, *, by_shape: bool) -> I64:
    """One int64 key per host row ``idx``: its name, and its input shape when ``by_shape``
    (1-D unique over these is far faster than unique(axis=0) over (name, shape) pairs)."""
    name = trace.host.name[idx].astype(np.int64)
    shape = (
        trace.host.input_dims[idx].astype(np.int64) if by_shape else np.zeros(len(idx), np.int64)
    )
    out: I64 = name * (np.int64(len(trace.strings)) + 1) + (shape + 1)
    return out


def decode_operator_keys(trace: Trace, keys: I64) -> I64:
    """(K, 2) string ids (name, input shape; -1: none) of ``operator_keys`` values."""
    width = len(trace.strings) + 1
    out: I64 = np.stack((keys // width, keys % width - 1), axis=1)
    return out


def operator_label(trace: Trace, ids: I64, *, by_shape: bool) -> tuple[str, str | None]:
    """(name, input shape) of one ``decode_operator_keys`` row; shape None unless ``by_shape``."""
    return trace.strings[int(ids[0])], trace.name(int(ids[1])) if by_shape else None


def nested_in_same_key(tree: OpTree, keys: I64) -> npt.NDArray[np.bool_]:
    """For each host row, whether an ancestor in the (folded) call tree has the same key:
    a recursive call (``aten::copy_`` inside ``aten::copy_``) whose time its outer call's
    total already holds. Pointer jumping up the tree, one vectorised step per level."""
    eff = tree.effective_parent
    out = np.zeros(len(eff), dtype=bool)
    node = np.flatnonzero(eff >= 0)
    anc = eff[node]
    while len(node):
        same = keys[anc] == keys[node]
        out[node[same]] = True
        node, anc = node[~same], eff[anc[~same]]
        keep = anc >= 0
        node, anc = node[keep], anc[keep]
    return out


def operator_stats(
    trace: Trace,
    *,
    by_shape: bool = False,
    links: Links | None = None,
    tree: OpTree | None = None,
) -> list[OperatorRow]:
    """Rows sorted by device self time (GPU traces) or host self time (CPU traces)."""
    links = links or Links(trace)
    tree = tree or OpTree(trace, links)
    times = tree.times
    idx = np.flatnonzero(times.is_operator)
    if len(idx) == 0:
        return []
    shape = trace.host.input_dims[idx] if by_shape else np.zeros(len(idx), dtype=np.int32)
    names_u, shapes_u, inverse = unique_pairs(trace.host.name[idx], shape)
    uniq = np.stack((names_u, shapes_u), axis=1)  # as decode_operator_keys gives them

    def total(values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        out: npt.NDArray[np.float64] = np.bincount(
            inverse, weights=values[idx], minlength=len(uniq)
        ).astype(np.float64)
        return out

    calls = np.bincount(inverse, minlength=len(uniq))
    # totals count a recursive call once (its outermost instance holds the inner ones)
    all_keys = np.full(len(trace.host), -1, dtype=np.int64)
    all_keys[idx] = inverse  # the group: equal for equal keys
    inner = nested_in_same_key(tree, all_keys)
    h_self = total(times.host_self)
    h_total = total(np.where(inner, 0.0, times.host_total))
    d_self = total(times.device_self)
    d_total = total(np.where(inner, 0.0, times.device_total))
    labels = [operator_label(trace, ids, by_shape=by_shape) for ids in uniq]
    rows = [
        OperatorRow(
            name=labels[i][0],
            input_shape=labels[i][1],
            calls=int(calls[i]),
            host_self_us=float(h_self[i]) / 1000.0,
            host_total_us=float(h_total[i]) / 1000.0,
            device_self_us=float(d_self[i]) / 1000.0,
            device_total_us=float(d_total[i]) / 1000.0,
            tc_eligible=labels[i][0] in names.TC_ELIGIBLE_OPS,
        )
        for i in range(len(uniq))
    ]
    if trace.has_gpu:
        rows.sort(key=lambda r: (-r.device_self_us, -r.host_self_us, r.name))
    else:
        rows.sort(key=lambda r: (-r.host_self_us, r.name))
    return rows
