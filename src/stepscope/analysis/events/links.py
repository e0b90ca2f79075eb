"""Links between event families: device op -> runtime call (correlation id) -> host op
(external id, or time nesting on the thread for graph launches). Vectorised joins via sorted
keys and searchsorted."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import HOST_PYTHON, Trace

I64 = npt.NDArray[np.int64]


def gather(values: npt.NDArray[Any], index: I64, fill: Any) -> npt.NDArray[Any]:
    """``values[index]`` where ``index >= 0``, ``fill`` elsewhere; safe for empty ``values``.

    (``values[np.maximum(index, 0)]`` raises on an empty table, e.g. a trace with kernels
    but no runtime calls.)
    """
    dtype = np.result_type(values.dtype, np.min_scalar_type(fill))
    out = np.full(len(index), fill, dtype=dtype)
    ok = (index >= 0) & (index < len(values))
    out[ok] = values[index[ok]]
    return out


def lookup(keys: I64, table_keys: I64) -> I64:
    """Index into ``table_keys`` of each key (first match), -1 when absent or key < 0."""
    if len(table_keys) == 0 or len(keys) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    order = np.argsort(table_keys, kind="stable")
    sorted_keys = table_keys[order]
    pos = np.searchsorted(sorted_keys, keys, side="left")
    pos_c = np.minimum(pos, len(sorted_keys) - 1)
    found = (pos < len(sorted_keys)) & (sorted_keys[pos_c] == keys) & (keys >= 0)
    return np.where(found, order[pos_c], -1).astype(np.int64)


GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch",
                                "cudaGraphLaunch_v10000", "cuGraphLaunch_ptsz"})


def is_graph_launch(name: str) -> bool:
    return name in GRAPH_LAUNCH_CALLS


WALK_BACK = 256  # enclosing-op search: siblings skipped before giving up


def enclosing_ops(trace: Trace, calls: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """For runtime calls ``calls``, the innermost host op on the same thread enclosing each
    (-1 when none). Kineto often gives cudaGraphLaunch its own correlation id as external id,
    which no host op carries; the enclosing op (CompiledFunction, CUDAGraph.replay, ...) is
    the one that replayed the graph."""
    host, rt = trace.host, trace.runtime
    owner = np.full(len(calls), -1, dtype=np.int64)
    ranges = np.flatnonzero(host.kind != HOST_PYTHON)
    for tid in np.unique(rt.tid[calls]).tolist():
        sub = np.flatnonzero(rt.tid[calls] == tid)
        q = calls[sub]
        cand = ranges[host.tid[ranges] == tid]
        if len(cand) == 0:
            continue
        cand = cand[np.argsort(host.ts[cand], kind="stable")]
        cts, cend = host.ts[cand], host.end[cand]
        k = np.searchsorted(cts, rt.ts[q], side="right") - 1
        qend = rt.end[q]
        for _ in range(WALK_BACK):  # skip finished siblings back to the innermost ancestor
            bad = (k >= 0) & (cend[np.maximum(k, 0)] < qend)
            if not bad.any():
                break
            k = np.where(bad, k - 1, k)
        found = (k >= 0) & (cend[np.maximum(k, 0)] >= qend)
        owner[sub[found]] = cand[k[found]]
    return owner


@dataclass(frozen=True)
class Links:
    trace: Trace

    @cached_property
    def device_runtime(self) -> I64:
        """For each device op, the index of the runtime call that launched it (or -1)."""
        return lookup(self.trace.device.correlation, self.trace.runtime.correlation)

    @cached_property
    def runtime_host(self) -> I64:
        """For each runtime call, the host op/annotation with its external id (or -1)."""
        host = self.trace.host
        candidates = np.flatnonzero((host.kind != HOST_PYTHON) & (host.external_id > 0))
        idx = lookup(self.trace.runtime.external_id, host.external_id[candidates])
        owner = gather(candidates, idx, -1)
        # graph launches often carry their own correlation id as external id, which no
        # host op has: tie them to the operator enclosing the call (enclosing_ops)
        lost = np.flatnonzero((owner < 0) & self.trace.string_ids(is_graph_launch)[
            self.trace.runtime.name])
        if len(lost):
            owner[lost] = enclosing_ops(self.trace, lost)
        return owner

    @cached_property
    def device_host(self) -> I64:
        """For each device op, the host op that launched it (through its runtime), or -1."""
        rt = self.device_runtime
        return gather(self.runtime_host, rt, -1)
