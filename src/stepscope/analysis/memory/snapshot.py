"""Allocator snapshot analysis (``torch.cuda.memory._snapshot()``).

Per device: reserved (Σ segment sizes), allocated (Σ ``active_allocated`` blocks), the
fragmentation the caching allocator holds (reserved - allocated; inactive blocks inside
segments that are also in use, i.e. split blocks that cannot be returned), the allocation
sites holding the most live bytes, and - from the recorded alloc/free trace
(``_record_memory_history``) - the peak of allocated memory, the sites live at the peak and
the out-of-memory moments (``oom`` entries, written when the snapshot comes from an OOM
observer). The trace is a ring buffer: memory allocated before its first entry is the
difference between the allocated bytes at the end and the trace's net allocations.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.memory_files import MemorySnapshot

I64 = npt.NDArray[np.int64]

TOP_SITES = 10
# bytes: no single allocation is this large (1 TiB; the largest GPUs hold under 300 GB), so
# a block beyond it is a corrupt record; 2**23 such entries still sum within int64
MAX_BLOCK = 1 << 40
BEFORE_TRACE = "<allocated before the recorded trace>"
NO_STACK = "<no stack recorded>"
CPP_ONLY = "<C++ frames only>"
_LIBRARY = re.compile(r"(site-packages|dist-packages|/lib/python\d|^<frozen|/torch/|^torch/)")

# trace actions
A_ALLOC, A_FREE, A_OTHER = 0, 1, 2
_ALLOC_ACTIONS = {"alloc": A_ALLOC}
_FREE_ACTIONS = {"free_requested": A_FREE, "free": A_FREE}


def _cpp_site(names: list[str]) -> str | None:
    """A C++-only stack (e.g. the backward pass): the autograd node, else the operator."""
    for pattern in ("Backward", "at::native::", "structured_"):
        hit = next((n for n in names if pattern in n and "empty" not in n), None)
        if hit is not None:
            return hit
    return None


def site_of(frames: Any) -> str:
    """Where an allocation was made: the innermost user Python frame ('file.py:12 in f'),
    else the innermost Python frame, else the autograd node or operator of a C++ stack."""
    if not isinstance(frames, list | tuple) or not frames:
        return NO_STACK
    py = None
    cpp: list[str] = []
    for f in frames:
        if not isinstance(f, dict):
            continue
        fn = str(f.get("filename", ""))
        name = str(f.get("name", ""))
        if fn.endswith(".py"):
            label = f"{fn}:{f.get('line', 0)} in {name}"
            if not _LIBRARY.search(fn.replace("\\", "/")):
                return label
            py = py or label
        elif name:
            cpp.append(name)
    return py or _cpp_site(cpp) or CPP_ONLY


@dataclass(frozen=True)
class Site:
    site: str
    bytes: int
    blocks: int


@dataclass(frozen=True)
class Oom:
    time_us: int | None
    requested: int  # bytes the failed allocation asked for
    device_free: int  # bytes CUDA reported free then
    allocated: int  # allocated bytes at that moment (trace replay)


@dataclass(frozen=True)
class DeviceSnapshot:
    device: int
    segments: int
    reserved: int
    allocated: int
    active: int  # allocated + awaiting free on another stream
    requested: int  # bytes asked for by the live allocations (before rounding)
    inactive: int  # reserved - active: cached, free for reuse
    split_inactive_blocks: int  # inactive blocks inside segments that are partly in use
    split_inactive_bytes: int
    largest_inactive_block: int
    expandable_segments: bool
    sites: tuple[Site, ...]  # live at the snapshot, by bytes
    trace_entries: int
    actions: dict[str, int]
    peak_allocated: int | None  # from the trace replay (None without a trace)
    peak_time_us: int | None
    peak_sites: tuple[Site, ...]
    before_trace: int  # bytes already allocated when the trace begins
    ooms: tuple[Oom, ...]

    @property
    def fragmentation_pct(self) -> float:
        return 100.0 * self.inactive / self.reserved if self.reserved else 0.0


@dataclass(frozen=True)
class SnapshotResult:
    path: str
    devices: tuple[DeviceSnapshot, ...]


_INT64 = 2**63


def _int(v: Any) -> int:
    """A snapshot number as an int64; 0 for anything else (a hostile or corrupt pickle can
    hold strings, NaN, infinities or ints beyond 64 bits in any field)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0
    if isinstance(v, float) and not math.isfinite(v):
        return 0
    return int(v) if -_INT64 <= v < _INT64 else 0


def _ints(values: list[Any]) -> I64:
    """``_int`` of each value: one C-speed conversion when all are plain ints (the usual
    case), a call per value only when some are not."""
    if set(map(type, values)) <= {int}:
        try:
            return np.array(values, dtype=np.int64)
        except OverflowError:  # an int beyond 64 bits: _int's 0 for it, per value
            pass
    return np.array([_int(v) for v in values], dtype=np.int64)


def _sites(items: Iterable[tuple[str, int]]) -> tuple[Site, ...]:
    acc: dict[str, list[int]] = {}
    for site, size in items:
        s = acc.setdefault(site, [0, 0])
        s[0] += size
        s[1] += 1
    ranked = sorted(acc.items(), key=lambda kv: (-kv[1][0], kv[0]))[:TOP_SITES]
    return tuple(Site(k, v[0], v[1]) for k, v in ranked)


def _replay(entries: tuple[dict[str, Any], ...], names: list[str], end_allocated: int,
            live_blocks: list[tuple[int, int, str]]
            ) -> tuple[int | None, int | None, tuple[Site, ...], int, tuple[Oom, ...]]:
    """Peak of allocated bytes over the trace, the sites live then, bytes allocated before
    the trace, and the OOM entries (with allocated bytes at that moment).

    ``names``: each entry's action as a string (read once by the caller)."""
    n = len(entries)
    if n == 0:
        return None, None, (), end_allocated, ()
    code = {a: _ALLOC_ACTIONS.get(a, _FREE_ACTIONS.get(a, A_OTHER)) for a in dict.fromkeys(names)}
    action = np.fromiter(map(code.__getitem__, names), dtype=np.int8, count=n)
    # a block beyond MAX_BLOCK bytes is a corrupt record: counted as 0, so that the running
    # sums below stay within int64 (sizes near 2**63 wrapped them)
    size = _ints([e.get("size") for e in entries])
    size[(size < 0) | (size > MAX_BLOCK)] = 0
    addr = _ints([e.get("addr", -1) for e in entries])  # -1 when absent, as _int(-1)
    delta = np.where(action == A_ALLOC, size, np.where(action == A_FREE, -size, 0))
    running = np.cumsum(delta)
    net = int(running[-1])
    before = end_allocated - net  # Python ints from here: the segments' total is unbounded
    k = int(np.argmax(running))
    peak = before + int(running[k])
    if before > peak:
        peak, k = before, -1
    times = [e.get("time_us") for e in entries]
    peak_time = _int(times[k]) if k >= 0 and times[k] is not None else None
    # who is live at the peak: allocations at or before k not freed by k ...
    order = np.lexsort((np.arange(n), addr))
    a, act = addr[order], action[order]
    nxt_free = np.full(n, n, dtype=np.int64)  # index of the free that ends each allocation
    same = np.zeros(n, dtype=bool)
    same[:-1] = (a[1:] == a[:-1])
    pair = np.zeros(n, dtype=bool)
    pair[:-1] = same[:-1] & (act[:-1] == A_ALLOC) & (act[1:] == A_FREE)
    nxt_free[order[np.flatnonzero(pair)]] = order[np.flatnonzero(pair) + 1]
    idx = np.arange(n)
    live = (action == A_ALLOC) & (idx <= k) & (nxt_free > k)
    items = [(site_of(entries[i].get("frames")), int(size[i])) for i in np.flatnonzero(live)]
    # ... plus memory from before the trace still live at the peak: frees after the peak
    # of blocks the trace never saw allocated, and blocks live at the end never allocated
    # in the trace (their own frames say where)
    freed_pre = np.zeros(n, dtype=bool)
    prev_alloc = np.zeros(n, dtype=bool)
    prev_alloc[1:] = same[:-1] & (act[:-1] == A_ALLOC)
    freed_pre[order] = (act == A_FREE) & ~prev_alloc
    pre_after = np.flatnonzero(freed_pre & (idx > k))
    items += [(BEFORE_TRACE, int(size[i])) for i in pre_after]
    traced = set(addr[action == A_ALLOC].tolist())
    items += [(site, sz) for a_, sz, site in live_blocks if a_ not in traced]
    ooms = tuple(
        Oom(time_us=_int(entries[i].get("time_us")) if entries[i].get("time_us") else None,
            requested=int(size[i]), device_free=_int(entries[i].get("device_free")),
            allocated=before + int(running[i]))
        for i in np.flatnonzero(np.fromiter(map("oom".__eq__, names), bool, n)).tolist()
    )
    return peak, peak_time, _sites(items), before, ooms


def snapshot_analysis(snap: MemorySnapshot) -> SnapshotResult:
    by_dev: dict[int, list[dict[str, Any]]] = {}
    for seg in snap.segments:
        by_dev.setdefault(_int(seg.get("device", 0)), []).append(seg)
    devices = sorted(set(by_dev) | {i for i, t in enumerate(snap.device_traces) if t})
    out = []
    for d in devices:
        segs = by_dev.get(d, [])
        reserved = allocated = active = requested = 0
        split_n = split_b = largest = 0
        expandable = False
        live: list[tuple[int, int, str]] = []
        for seg in segs:
            reserved += _int(seg.get("total_size"))
            expandable |= bool(seg.get("is_expandable", False))
            raw_blocks = seg.get("blocks")
            blocks = [b for b in raw_blocks if isinstance(b, dict)] \
                if isinstance(raw_blocks, list | tuple) else []
            in_use = any(b.get("state") != "inactive" for b in blocks)
            for b in blocks:
                size = _int(b.get("size"))
                state = b.get("state")
                if state == "active_allocated":
                    allocated += size
                    active += size
                    requested += _int(b.get("requested_size", size))
                    live.append((_int(b.get("address", -1)), size, site_of(b.get("frames"))))
                elif state == "active_awaiting_free" or state == "active_pending_free":
                    active += size
                elif state == "inactive":
                    largest = max(largest, size)
                    if in_use:
                        split_n += 1
                        split_b += size
        entries = snap.device_traces[d] if 0 <= d < len(snap.device_traces) else ()
        names = [str(e.get("action")) for e in entries]  # once: counted here, replayed below
        actions = Counter(names)
        peak, peak_t, peak_sites, before, ooms = _replay(entries, names, allocated, live)
        out.append(DeviceSnapshot(
            device=d, segments=len(segs), reserved=reserved, allocated=allocated,
            active=active, requested=requested, inactive=max(reserved - active, 0),
            split_inactive_blocks=split_n, split_inactive_bytes=split_b,
            largest_inactive_block=largest, expandable_segments=expandable,
            sites=_sites((s, sz) for _, sz, s in live), trace_entries=len(entries),
            actions=dict(sorted(actions.items())), peak_allocated=peak,
            peak_time_us=peak_t, peak_sites=peak_sites, before_trace=before, ooms=ooms,
        ))
    return SnapshotResult(path=snap.path, devices=tuple(out))
