"""Module view: the ``nn.Module`` hierarchy with host and device time.

Module ranges are the Python tracer's ``nn.Module: <Class>_<n>`` events (``with_stack`` or
``with_modules``); they nest by time on their thread. Per module call: host total = its
duration, host self = total - its child modules; device self = device ops launched (via
their runtime call) while the module is the innermost one running on the launching
thread, device total = self + child modules'. Calls are aggregated per module path
(``Model_0/Layer_1/Linear_0``). Work launched outside any module (the backward pass runs
on the autograd thread, outside module ranges) is not charged to a module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.intervals import nest_sorted
from stepscope.analysis.events.links import Links
from stepscope.analysis.events.optree import OpTree
from stepscope.model.trace import HOST_OP, HOST_PYTHON, Trace

I64 = npt.NDArray[np.int64]
Ints = npt.NDArray[np.integer[Any]]
F64 = npt.NDArray[np.float64]

MODULE_PREFIX = "nn.Module: "
TOP_CHILDREN = 5  # operators / kernels listed per module


def is_module_name(name: str) -> bool:
    return name.startswith(MODULE_PREFIX)


@dataclass(frozen=True)
class NamedTime:
    name: str
    calls: int
    total_ns: float


@dataclass(frozen=True)
class ModuleNode:
    id: int
    parent: int  # -1 for a root
    name: str  # "Linear_0" (without the "nn.Module: " prefix)
    path: str  # "Model_0/Block_1/Linear_0"
    depth: int
    calls: int
    host_total_ns: float
    host_self_ns: float
    device_total_ns: float
    device_self_ns: float
    max_call_ns: float  # longest call (device total, or host total without device work)
    operators: tuple[NamedTime, ...]  # top-level operators run directly in the module
    kernels: tuple[NamedTime, ...]  # device ops launched directly in the module


@dataclass(frozen=True)
class ModulesResult:
    nodes: tuple[ModuleNode, ...]  # depth-first order (parents before children)
    module_events: int
    device_ns_in_modules: float  # device time launched inside any module
    device_ns_total: float  # all device op time of the trace


def nest(tid: Ints, start: I64, end: I64) -> I64:
    """Parent index (into the inputs) of each range: the innermost range on the same
    thread that contains its start (ranges sorted by start asc, end desc); -1 at the top."""
    n = len(start)
    parent = np.full(n, -1, dtype=np.int64)
    for t in np.unique(tid):
        idx = np.flatnonzero(tid == t)
        order = np.lexsort((-end[idx], start[idx]))
        idx = idx[order]
        _, up = nest_sorted(start[idx], end[idx])
        ok = up >= 0
        parent[idx[ok]] = idx[up[ok]]
    return parent


def innermost(rng_tid: Ints, rng_start: I64, rng_end: I64, parent: I64,
              tid: Ints, ts: I64) -> I64:
    """For each point (tid, ts), the innermost range containing ts on that thread; -1."""
    out = np.full(len(ts), -1, dtype=np.int64)
    if len(rng_start) == 0 or len(ts) == 0:
        return out
    depth_cap = len(rng_start) + 1
    for t in np.unique(rng_tid):
        pts = np.flatnonzero(tid == t)
        if len(pts) == 0:
            continue
        idx = np.flatnonzero(rng_tid == t)
        order = np.lexsort((-rng_end[idx], rng_start[idx]))
        idx = idx[order]
        p = np.searchsorted(rng_start[idx], ts[pts], side="right") - 1
        cand = np.where(p >= 0, idx[np.maximum(p, 0)], -1)
        for _ in range(depth_cap):
            c = np.maximum(cand, 0)
            bad = (cand >= 0) & ~((rng_start[c] <= ts[pts]) & (ts[pts] < rng_end[c]))
            if not bad.any():
                break
            cand = np.where(bad, parent[c], cand)
        out[pts] = cand
    return out


def _paths(parent: I64, name: Ints) -> I64:
    """Interned path id per range: equal ids <=> equal chains of names from the root."""
    n = len(parent)
    path = np.full(n, -1, dtype=np.int64)
    depth = np.zeros(n, dtype=np.int64)
    done = parent < 0
    depth_of = np.where(done, 0, -1)
    for _ in range(n + 1):  # resolve depth level by level (tree height iterations)
        todo = (depth_of < 0) & (depth_of[np.maximum(parent, 0)] >= 0)
        if not todo.any():
            break
        depth_of[todo] = depth_of[parent[todo]] + 1
    depth = depth_of
    next_id = 0
    for level in range(int(depth.max()) + 1 if n else 0):
        sel = np.flatnonzero(depth == level)
        parent_path = np.where(parent[sel] >= 0, path[np.maximum(parent[sel], 0)], -1)
        key = (parent_path + 1) * (1 << 31) + name[sel].astype(np.int64)
        _, inv = np.unique(key, return_inverse=True)
        inv = inv.reshape(-1)
        path[sel] = inv + next_id
        next_id += int(inv.max()) + 1 if len(inv) else 0
    return path


def _top(keys: I64, names: Ints, values: F64, n_keys: int, strings: tuple[str, ...]
         ) -> list[tuple[NamedTime, ...]]:
    """Per key, the TOP_CHILDREN names with the largest summed value."""
    out: list[list[NamedTime]] = [[] for _ in range(n_keys)]
    if len(keys) == 0:
        return [() for _ in range(n_keys)]
    uniq, inv = np.unique(keys * (1 << 31) + names.astype(np.int64), return_inverse=True)
    inv = inv.reshape(-1)
    u_key, u_name = uniq >> 31, uniq & ((1 << 31) - 1)
    tot = np.bincount(inv, weights=values, minlength=len(uniq))
    cnt = np.bincount(inv, minlength=len(uniq))
    order = np.lexsort((-tot, u_key))
    rank = np.arange(len(order)) - np.searchsorted(u_key[order], u_key[order], side="left")
    for j in order[rank < TOP_CHILDREN].tolist():
        out[int(u_key[j])].append(NamedTime(strings[int(u_name[j])], int(cnt[j]),
                                            float(tot[j])))
    return [tuple(x) for x in out]


def module_analysis(trace: Trace, links: Links, tree: OpTree) -> ModulesResult:
    host, rt, dev = trace.host, trace.runtime, trace.device
    is_mod = trace.string_ids(is_module_name)[host.name] & (host.kind == HOST_PYTHON)
    mods = np.flatnonzero(is_mod)
    dev_total = float(dev.dur.sum())
    if len(mods) == 0:
        return ModulesResult((), 0, 0.0, dev_total)
    m_tid, m_start = host.tid[mods], host.ts[mods]
    m_end = m_start + host.dur[mods]
    parent = nest(m_tid, m_start, m_end)
    path = _paths(parent, host.name[mods])
    n_paths = int(path.max()) + 1
    m_dur = host.dur[mods].astype(np.float64)
    # host self: minus direct child modules
    has_p = parent >= 0
    child_sum: F64 = np.bincount(parent[has_p], weights=m_dur[has_p],
                                 minlength=len(mods)).astype(np.float64)
    # device ops: launched by a runtime call on a module's thread while it runs
    rt_idx = links.device_runtime
    launched = rt_idx >= 0
    d_idx = np.flatnonzero(launched)
    r = rt_idx[d_idx]
    d_mod = innermost(m_tid, m_start, m_end, parent, rt.tid[r], rt.ts[r])
    in_mod = d_mod >= 0
    d_dur = dev.dur[d_idx].astype(np.float64)
    dev_self: F64 = np.bincount(d_mod[in_mod], weights=d_dur[in_mod],
                                minlength=len(mods)).astype(np.float64)
    dev_tot = dev_self.copy()
    depth = np.zeros(len(mods), dtype=np.int64)
    cur = parent.copy()
    while (cur >= 0).any():
        depth += cur >= 0
        cur = np.where(cur >= 0, parent[np.maximum(cur, 0)], -1)
    for level in range(int(depth.max()), 0, -1):
        sel = np.flatnonzero((depth == level) & has_p)
        np.add.at(dev_tot, parent[sel], dev_tot[sel])
    # aggregate per path
    calls = np.bincount(path, minlength=n_paths)

    def per_path(v: F64) -> F64:
        out: F64 = np.bincount(path, weights=v, minlength=n_paths).astype(np.float64)
        return out

    host_total, host_self = per_path(m_dur), per_path(np.maximum(m_dur - child_sum, 0.0))
    device_total, device_self = per_path(dev_tot), per_path(dev_self)
    call_len = np.where(dev_tot > 0, dev_tot, m_dur)
    max_call = np.zeros(n_paths)
    np.maximum.at(max_call, path, call_len)
    first = np.full(n_paths, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, path, m_start)
    rep = np.zeros(n_paths, dtype=np.int64)  # one call per path, for names and parents
    rep[path[::-1]] = np.arange(len(mods))[::-1]
    p_parent = np.where(parent[rep] >= 0, path[np.maximum(parent[rep], 0)], -1)
    p_depth = depth[rep]
    # operators run directly in a module: operators whose parent is not an operator
    ops = np.flatnonzero((host.kind == HOST_OP) & ~tree.folded)
    eff = tree.effective_parent[ops]
    top_level = (eff < 0) | (host.kind[np.maximum(eff, 0)] != HOST_OP)
    ops = ops[top_level]
    o_mod = innermost(m_tid, m_start, m_end, parent, host.tid[ops], host.ts[ops])
    ok = o_mod >= 0
    op_top = _top(path[o_mod[ok]], host.name[ops[ok]], host.dur[ops[ok]].astype(np.float64),
                  n_paths, trace.strings)
    k_top = _top(path[d_mod[in_mod]], dev.name[d_idx[in_mod]], d_dur[in_mod], n_paths,
                 trace.strings)
    order = np.lexsort((p_depth, first))
    # depth-first: sort by the chain of first-start times from the root
    key: dict[int, tuple[int, ...]] = {}
    for p in order.tolist():
        pp = int(p_parent[p])
        key[p] = (*key.get(pp, ()), int(first[p]), p) if pp >= 0 else (int(first[p]), p)
    dfs = sorted(range(n_paths), key=lambda p: key[p])
    new_id = {p: i for i, p in enumerate(dfs)}
    names: dict[int, str] = {}
    nodes = []
    for p in dfs:
        nm = trace.strings[host.name[mods[rep[p]]]].removeprefix(MODULE_PREFIX)
        pp = int(p_parent[p])
        names[p] = f"{names[pp]}/{nm}" if pp >= 0 else nm
        nodes.append(ModuleNode(
            id=new_id[p], parent=new_id[pp] if pp >= 0 else -1, name=nm, path=names[p],
            depth=int(p_depth[p]), calls=int(calls[p]),
            host_total_ns=float(host_total[p]), host_self_ns=float(host_self[p]),
            device_total_ns=float(device_total[p]), device_self_ns=float(device_self[p]),
            max_call_ns=float(max_call[p]), operators=op_top[p], kernels=k_top[p],
        ))
    in_any = float(d_dur[in_mod].sum())
    return ModulesResult(tuple(nodes), len(mods), in_any, dev_total)
