"""The host call tree: which host range is the parent of which, per thread.

Nesting is computed without a per-event loop: on one thread, with ranges sorted by
(start asc, end desc), the ranges still open when range i starts are exactly its
ancestors, so depth_i = i - #(ranges ending at or before start_i); the parent is then
the closest earlier range one level up (one searchsorted per depth level).
A range that only partially overlaps an earlier one is attached to the innermost range
open at its start (torch-tb-profiler drops such ranges and logs an error instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.intervals import nest_sorted
from stepscope.analysis.events.links import Links, gather, not_an_operator
from stepscope.model.trace import HOST_OP, HOST_PYTHON, Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class NodeTimes:
    """Per host-row times (ns), as torch-tb-profiler and PyTorch's ``key_averages``:
    host self = duration - direct children - own runtime calls; device self = device ops
    launched by own runtime calls; device total = self + all descendants'."""

    host_self: F64
    host_total: F64
    device_self: F64
    device_total: F64
    is_operator: npt.NDArray[np.bool_]


@dataclass(frozen=True)
class OpTree:
    """Tree over ``trace.host`` rows (python frames excluded: their index maps to -1)."""

    trace: Trace
    links: Links

    @cached_property
    def _structure(self) -> tuple[I64, I64]:
        host = self.trace.host
        n = len(host)
        parent = np.full(n, -1, dtype=np.int64)
        depth = np.full(n, -1, dtype=np.int64)
        nodes = np.flatnonzero(host.kind != HOST_PYTHON)
        if len(nodes) == 0:
            return parent, depth
        tids = host.tid[nodes]
        for tid in np.unique(tids):
            idx = nodes[tids == tid]
            start, end = host.ts[idx], host.end[idx]
            order = np.lexsort((-end, start))
            idx, start, end = idx[order], start[order], end[order]
            d, up = nest_sorted(start, end)
            depth[idx] = d
            ok = up >= 0
            parent[idx[ok]] = idx[up[ok]]
        return parent, depth

    @property
    def parent(self) -> I64:
        return self._structure[0]

    @property
    def depth(self) -> I64:
        return self._structure[1]

    @cached_property
    def representative(self) -> I64:
        """Fold an operator's only child into it when it has the same name (as PyTorch's
        ``_remove_dup_nodes``): rep[i] is the node i's statistics are merged into."""
        host = self.trace.host
        parent = self.parent
        n = len(host)
        rep = np.arange(n, dtype=np.int64)
        has_parent = parent >= 0
        children = np.bincount(parent[has_parent], minlength=n)
        p = np.maximum(parent, 0)
        fold = (
            has_parent
            & (children[p] == 1)
            & (host.kind == HOST_OP)
            & (host.kind[p] == HOST_OP)
            & (host.name == host.name[p])
        )
        rep[fold] = parent[fold]
        while True:  # resolve chains a -> b -> c (depth of the chain, not per event)
            nxt = rep[rep]
            if np.array_equal(nxt, rep):
                return rep
            rep = nxt

    @cached_property
    def folded(self) -> npt.NDArray[np.bool_]:
        out: npt.NDArray[np.bool_] = self.representative != np.arange(len(self.trace.host))
        return out

    @cached_property
    def effective_parent(self) -> I64:
        parent = self.parent
        return gather(self.representative, parent, -1)

    @cached_property
    def runtime_owner(self) -> I64:
        """Host node each runtime call belongs to (after folding), -1 if none."""
        owner = self.links.runtime_host
        return gather(self.representative, owner, -1)

    @cached_property
    def device_owner(self) -> I64:
        rt = self.links.device_runtime
        return gather(self.runtime_owner, rt, -1)

    @cached_property
    def _roll_levels(self) -> list[I64]:
        """The live nodes with a parent, by depth, deepest first (each level ascending):
        computed once for every roll-up (the report rolls up several values)."""
        depth, eff = self.depth, self.effective_parent
        nodes = np.flatnonzero(~self.folded & (depth >= 1) & (eff >= 0))
        by_depth = nodes[np.argsort(depth[nodes], kind="stable")]
        bounds = np.searchsorted(depth[by_depth], np.arange(int(depth.max()) + 2)
                                 if len(depth) else np.zeros(1, dtype=np.int64))
        return [by_depth[bounds[level]:bounds[level + 1]]
                for level in range(len(bounds) - 2, 0, -1)]

    def roll_up(self, self_values: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Totals: each node's value plus all its (non-folded) descendants', deepest first."""
        total: npt.NDArray[np.float64] = self_values.astype(np.float64)
        eff = self.effective_parent
        for sel in self._roll_levels:
            np.add.at(total, eff[sel], total[sel])
        return total

    @cached_property
    def times(self) -> NodeTimes:
        host, rt, dev = self.trace.host, self.trace.runtime, self.trace.device
        n = len(host)
        live = ~self.folded & (self.depth >= 0)
        eff = self.effective_parent
        has = live & (eff >= 0)

        def per_node(owner: I64, durations: I64) -> F64:
            ok = owner >= 0
            out: F64 = np.bincount(
                owner[ok], weights=durations[ok].astype(np.float64), minlength=n
            ).astype(np.float64)
            return out

        child_sum = per_node(np.where(has, eff, -1), host.dur)
        rt_sum = per_node(self.runtime_owner, rt.dur)
        dev_self = per_node(self.device_owner, dev.dur)
        host_total = host.dur.astype(np.float64)
        host_self = np.maximum(host_total - child_sum - rt_sum, 0.0)
        excluded = self.trace.string_ids(not_an_operator)[host.name]
        is_operator = live & (host.kind == HOST_OP) & ~excluded
        return NodeTimes(host_self, host_total, dev_self, self.roll_up(dev_self), is_operator)
