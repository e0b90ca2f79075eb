"""Memory view from the trace's ``[memory]`` records (``profile_memory=True``).

Per device: the allocated/reserved curve and its peak (with the step and the operator
active at the peak), allocations matched with their frees by address (size, lifetime,
operator, step; allocations never freed inside the trace are listed as possible leaks),
and per-operator statistics with torch-tb-profiler's definitions (docs/metrics.md
"Memory"). Traces from PyTorch < 1.10 carry neither ``Addr`` nor the allocator totals:
their curve is the running sum of the recorded bytes, relative to the trace start.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.events.steps import Steps, step_index
from stepscope.model.trace import HOST_PYTHON, Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

CURVE_POINTS = 2000  # points kept per device curve (min/max per bucket, peak always kept)
TOP_ALLOCATIONS = 20
CUMULATIVE_NOTE = (
    "records carry no allocator totals (PyTorch < 1.10): the curve is the running sum of "
    "the recorded allocations and frees, relative to the start of the trace; memory "
    "allocated before the trace is not visible"
)


def device_label(device_type: int, device_id: int) -> str | None:
    """torch-tb-profiler's device names: 'CPU', 'GPU0', ...; None for other device types."""
    if device_type == 0:
        return "CPU"
    if device_type == 1:
        return f"GPU{device_id}"
    return None


@dataclass(frozen=True)
class OpMemoryRow:
    """torch-tb-profiler's Memory Statistics row (bytes; counts of allocation records)."""

    name: str
    calls: int
    size_increase: int  # signed bytes of the op's own records and all its descendants'
    self_size_increase: int
    allocation_count: int
    self_allocation_count: int
    allocation_size: int  # positive bytes only
    self_allocation_size: int


@dataclass(frozen=True)
class Allocation:
    size: int
    alloc_ns: int
    free_ns: int | None  # None: never freed inside the trace
    operator: str | None  # innermost operator running when it was allocated
    step: str | None  # step (ProfilerStep number) it was allocated in

    @property
    def lifetime_ns(self) -> int | None:
        return None if self.free_ns is None else self.free_ns - self.alloc_ns


@dataclass(frozen=True)
class DeviceMemory:
    device: str  # "CPU", "GPU0", ...
    cumulative: bool  # True: legacy records, curve = running sum of bytes
    records: int
    # curve (down-sampled for the report; the peak is always one of the points)
    t_ns: I64
    allocated: I64
    reserved: I64  # -1 when unknown (cumulative curves)
    peak_allocated: int
    peak_ns: int
    peak_step: str | None
    peak_operator: str | None
    peak_reserved: int  # max reserved over the trace (-1 unknown)
    capacity: int | None  # deviceProperties totalGlobalMem of a GPU, when known
    step_start_allocated: tuple[tuple[str, int], ...]  # (step, allocated at its start)
    # allocation/free matching (needs addresses)
    allocations: int
    frees: int
    matched: int
    unfreed_count: int
    unfreed_bytes: int
    frees_without_alloc: int
    largest: tuple[Allocation, ...]  # largest allocations, largest first
    unfreed: tuple[Allocation, ...]  # largest never-freed allocations (possible leaks)
    operators: tuple[OpMemoryRow, ...]  # sorted by allocation size desc


@dataclass(frozen=True)
class MemoryResult:
    origin_ns: int  # time origin of the curves (first event of the trace)
    devices: tuple[DeviceMemory, ...]
    note: str | None  # set for cumulative (legacy) curves
    attributed: int  # records attributed to an operator (torch-tb-profiler: not "staled")
    total_records: int

    def device(self, name: str) -> DeviceMemory | None:
        return next((d for d in self.devices if d.device == name), None)


def _record_nodes(trace: Trace, tree: OpTree) -> I64:
    """Deepest host node (not a Python frame) on the record's thread whose [start, end)
    contains the record's time; -1 when none."""
    host, mem = trace.host, trace.memory
    out = np.full(len(mem), -1, dtype=np.int64)
    nodes = np.flatnonzero(host.kind != HOST_PYTHON)
    if len(nodes) == 0 or len(mem) == 0:
        return out
    parent = tree.parent
    for tid in np.unique(mem.tid):
        recs = np.flatnonzero(mem.tid == tid)
        idx = nodes[host.tid[nodes] == tid]
        if len(idx) == 0:
            continue
        start, end = host.ts[idx], host.end[idx]
        order = np.lexsort((-end, start))
        idx = idx[order]
        ts = mem.ts[recs]
        # the last range starting at or before ts; if it does not contain ts, one of its
        # ancestors is the deepest that does (ranges nest), so walk up level by level
        pos = np.searchsorted(start[order], ts, side="right") - 1
        cand = np.where(pos >= 0, idx[np.maximum(pos, 0)], -1)
        for _ in range(int(tree.depth.max()) + 2 if len(tree.depth) else 1):
            c = np.maximum(cand, 0)
            bad = (cand >= 0) & ~((host.ts[c] <= ts) & (ts < host.end[c]))
            if not bad.any():
                break
            cand = np.where(bad, parent[c], cand)
        out[recs] = cand
    return out


def _downsample(values: I64, peak: int, limit: int = CURVE_POINTS) -> I64:
    """Indices keeping the first/last point and each bucket's min and max (and the peak)."""
    n = len(values)
    if n <= limit:
        return np.arange(n, dtype=np.int64)
    buckets = limit // 2
    size = -(-n // buckets)
    pad = buckets * size - n
    hi = np.concatenate([values, np.full(pad, np.iinfo(np.int64).min)]).reshape(buckets, size)
    lo = np.concatenate([values, np.full(pad, np.iinfo(np.int64).max)]).reshape(buckets, size)
    base = np.arange(buckets, dtype=np.int64) * size
    picks = np.concatenate([base + hi.argmax(axis=1), base + lo.argmin(axis=1),
                            np.array([0, n - 1, peak], dtype=np.int64)])
    return np.unique(picks[picks < n])


def _op_rows(trace: Trace, tree: OpTree, rec_node: I64, sel: B) -> tuple[OpMemoryRow, ...]:
    """Per-operator statistics over the records ``sel`` (one device)."""
    host = trace.host
    n = len(host)
    times = tree.times
    rep = tree.representative
    node = np.where(rec_node >= 0, rep[np.maximum(rec_node, 0)], -1)
    is_op = times.is_operator
    own = sel & (node >= 0) & is_op[np.maximum(node, 0)]
    nb = trace.memory.bytes
    owner = node[own]
    b = nb[own].astype(np.float64)
    pos = b > 0
    self_inc: F64 = np.bincount(owner, weights=b, minlength=n).astype(np.float64)
    self_size: F64 = np.bincount(owner[pos], weights=b[pos], minlength=n).astype(np.float64)
    self_count: F64 = np.bincount(owner[pos], minlength=n).astype(np.float64)
    tot_inc, tot_size, tot_count = (tree.roll_up(v) for v in (self_inc, self_size, self_count))
    ops = np.flatnonzero(is_op)
    if len(ops) == 0:
        return ()
    names = host.name[ops]
    uniq, inv = np.unique(names, return_inverse=True)
    calls = np.bincount(inv, minlength=len(uniq))
    cols = [np.rint(np.bincount(inv, weights=v[ops], minlength=len(uniq))).astype(np.int64)
            for v in (tot_inc, self_inc, tot_count, self_count, tot_size, self_size)]
    rows = []
    for k in np.flatnonzero(np.any(np.stack(cols) != 0, axis=0)):
        rows.append(OpMemoryRow(
            name=trace.strings[uniq[k]], calls=int(calls[k]),
            size_increase=int(cols[0][k]), self_size_increase=int(cols[1][k]),
            allocation_count=int(cols[2][k]), self_allocation_count=int(cols[3][k]),
            allocation_size=int(cols[4][k]), self_allocation_size=int(cols[5][k]),
        ))
    rows.sort(key=lambda r: (-r.allocation_size, -r.self_allocation_size, r.name))
    return tuple(rows)


def _match(addr: I64, nbytes: I64, ts: I64) -> I64:
    """For each record (sorted by time), the index of the matching free of an allocation
    (the next record with the same address, when it is a free); -1 otherwise."""
    n = len(addr)
    out = np.full(n, -1, dtype=np.int64)
    if n == 0:
        return out
    order = np.lexsort((np.arange(n), addr))  # by address, then time order
    a, b = addr[order], nbytes[order]
    nxt_same = np.zeros(n, dtype=bool)
    nxt_same[:-1] = a[1:] == a[:-1]
    ok = np.zeros(n, dtype=bool)
    ok[:-1] = nxt_same[:-1] & (b[:-1] > 0) & (b[1:] < 0)
    src = order[ok]
    dst = order[np.flatnonzero(ok) + 1]
    out[src] = dst
    return out


def memory_analysis(trace: Trace, steps: Steps, tree: OpTree) -> MemoryResult:
    mem = trace.memory
    host = trace.host
    origin = int(host.ts.min()) if len(host) else (int(mem.ts.min()) if len(mem) else 0)
    if trace.meta.window_start is not None:
        origin = min(origin, trace.meta.window_start) if len(host) else trace.meta.window_start
    if len(mem) == 0:
        return MemoryResult(origin, (), None, 0, 0)
    rec_node = _record_nodes(trace, tree)
    rep = tree.representative
    node_rep = np.where(rec_node >= 0, rep[np.maximum(rec_node, 0)], -1)
    is_op = tree.times.is_operator
    attributed = (node_rep >= 0) & is_op[np.maximum(node_rep, 0)]
    step_idx = step_index(steps, mem.ts)
    step_names = [s.name for s in steps.steps]
    capacity = {f"GPU{d.id}": d.total_memory for d in trace.meta.devices if d.total_memory > 0}
    # one label per distinct (type, id) pair, found through a single int64 key
    keys, inv = np.unique(mem.device_type.astype(np.int64) * (1 << 32)
                          + mem.device_id.astype(np.int64) + (1 << 31), return_inverse=True)
    pair_label = [device_label(int(k >> 32), int((k & 0xFFFFFFFF) - (1 << 31)))
                  for k in keys.tolist()]
    inv = inv.reshape(-1)
    devices = []
    any_cumulative = False

    def op_name(i: int) -> str | None:
        return trace.strings[host.name[node_rep[i]]] if attributed[i] else None

    def step_name(i: int) -> str | None:
        return step_names[step_idx[i]] if step_idx[i] >= 0 else None

    for label in sorted({x for x in pair_label if x}, key=lambda s: (s != "CPU", len(s), s)):
        idx = np.flatnonzero(np.isin(inv, [k for k, x in enumerate(pair_label) if x == label]))
        idx = idx[np.argsort(mem.ts[idx], kind="stable")]
        sel = np.zeros(len(mem), dtype=bool)
        sel[idx] = True
        ts = mem.ts[idx]
        nb = mem.bytes[idx]
        cumulative = bool(np.all(mem.total_allocated[idx] < 0))
        any_cumulative |= cumulative
        if cumulative:
            allocated = np.cumsum(nb)
            reserved = np.full(len(idx), -1, dtype=np.int64)
        else:
            has = mem.total_allocated[idx] >= 0
            idx, ts, nb = idx[has], ts[has], nb[has]
            allocated = mem.total_allocated[idx]
            reserved = mem.total_reserved[idx]
        if len(idx) == 0:
            continue
        p = int(np.argmax(allocated))
        keep = _downsample(allocated, p)
        # step boundaries: allocated just before each step starts
        step_lo = np.array([st.start for st in steps.steps], dtype=np.int64)
        before = np.searchsorted(ts, step_lo, side="left") - 1
        at = np.where(before >= 0, allocated[np.maximum(before, 0)], 0).tolist()
        starts = [(st.name, int(v)) for st, v in zip(steps.steps, at, strict=True)]
        # alloc/free pairs by address
        addr = mem.addr[idx]
        has_addr = bool(np.all(addr >= 0)) and len(addr) > 0
        allocs = nb > 0
        frees = nb < 0
        largest: tuple[Allocation, ...] = ()
        unfreed: tuple[Allocation, ...] = ()
        matched = unfreed_n = unfreed_b = orphan = 0
        if has_addr:
            free_of = _match(addr, nb, ts)
            matched = int((free_of >= 0).sum())
            freed_mask = np.zeros(len(idx), dtype=bool)
            freed_mask[free_of[free_of >= 0]] = True
            orphan = int((frees & ~freed_mask).sum())
            never = allocs & (free_of < 0)
            unfreed_n = int(never.sum())
            unfreed_b = int(nb[never].sum())

            def alloc_of(j: int, idx: I64 = idx, free_of: I64 = free_of, nb: I64 = nb,
                         ts: I64 = ts) -> Allocation:
                i = int(idx[j])
                f = int(free_of[j])
                return Allocation(size=int(nb[j]), alloc_ns=int(ts[j]),
                                  free_ns=int(ts[f]) if f >= 0 else None,
                                  operator=op_name(i), step=step_name(i))

            a_idx = np.flatnonzero(allocs)
            top = a_idx[np.lexsort((a_idx, -nb[a_idx]))][:TOP_ALLOCATIONS]
            largest = tuple(alloc_of(int(j)) for j in top)
            n_idx = np.flatnonzero(never)
            topn = n_idx[np.lexsort((n_idx, -nb[n_idx]))][:TOP_ALLOCATIONS]
            unfreed = tuple(alloc_of(int(j)) for j in topn)
        pi = int(idx[p])
        devices.append(DeviceMemory(
            device=label, cumulative=cumulative, records=len(idx),
            t_ns=ts[keep], allocated=allocated[keep].astype(np.int64),
            reserved=reserved[keep].astype(np.int64),
            peak_allocated=int(allocated[p]), peak_ns=int(ts[p]),
            peak_step=step_name(pi), peak_operator=op_name(pi),
            peak_reserved=int(reserved.max()) if not cumulative else -1,
            capacity=capacity.get(label),
            step_start_allocated=tuple(starts),
            allocations=int(allocs.sum()), frees=int(frees.sum()), matched=matched,
            unfreed_count=unfreed_n, unfreed_bytes=unfreed_b, frees_without_alloc=orphan,
            largest=largest, unfreed=unfreed,
            operators=_op_rows(trace, tree, rec_node, sel),
        ))
    return MemoryResult(
        origin_ns=origin, devices=tuple(devices),
        note=CUMULATIVE_NOTE if any_cumulative else None,
        attributed=int(attributed.sum()), total_records=len(mem),
    )
