"""The summaries of ``nsys stats``, computed from the trace model.

cuda_api_sum, cuda_gpu_kern_sum, cuda_gpu_mem_time_sum, cuda_gpu_mem_size_sum, nvtx_sum,
nvtx_gpu_proj_sum and osrt_sum (docs/metrics.md "Nsight Systems summaries"): the same
rows and figures as the report of that name, in nanoseconds (bytes for sizes); rows sorted
by total, largest first; ``time_pct`` is a share of the listed rows' total, as in nsys.
API names are shown without their version suffix; kernel names demangled, with the mangled
name alongside when the export has it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import lookup
from stepscope.analysis.events.nvtx_tree import nvtx_levels
from stepscope.analysis.trace.groupstats import GroupStats, group_stats
from stepscope.model.trace import DEV_KERNEL, DEV_MEMCPY, DEV_MEMSET, Trace

I64 = npt.NDArray[np.int64]

COPY_LABELS = {0: "Unknown", 1: "Host-to-Device", 2: "Device-to-Host", 3: "Host-to-Array",
               4: "Array-to-Host", 5: "Array-to-Array", 6: "Array-to-Device",
               7: "Device-to-Array", 8: "Device-to-Device", 9: "Host-to-Host",
               10: "Peer-to-Peer", 11: "Unified Host-to-Device", 12: "Unified Device-to-Host",
               13: "Unified Device-to-Device"}
# Kineto's memcpy spelling, for traces without copy kinds ("Memcpy HtoD (...)")
_SHORT_TO_KIND = {"HtoD": 1, "DtoH": 2, "HtoA": 3, "AtoH": 4, "AtoA": 5, "AtoD": 6, "DtoA": 7,
                  "DtoD": 8, "HtoH": 9, "PtoP": 10}
STYLES = {0: "PushPop", 1: "StartEnd"}


@dataclass(frozen=True)
class StatRow:
    """One row of an nsys-stats style summary (values in ns, or bytes for sizes)."""

    name: str
    time_pct: float
    total: int
    count: int
    avg: float
    med: float
    min: int
    max: int
    stddev: float
    style: str | None = None  # NVTX: PushPop | StartEnd
    mangled: str | None = None  # kernels: the mangled name when known


@dataclass(frozen=True)
class ProjRow:
    """nvtx_gpu_proj_sum: an NVTX range projected onto the GPU work launched inside it."""

    name: str
    style: str
    total_proj_ns: int
    total_range_ns: int
    instances: int
    proj_avg_ns: float
    proj_med_ns: float
    proj_min_ns: int
    proj_max_ns: int
    proj_stddev_ns: float
    total_gpu_ops: int
    avg_gpu_ops: float
    avg_range_lvl: float = 0.0  # nesting level of push/pop ranges (0 = outermost)
    avg_num_child: float = 0.0  # direct child ranges


@dataclass(frozen=True)
class NsysStats:
    cuda_api_sum: list[StatRow]
    cuda_gpu_kern_sum: list[StatRow]
    cuda_gpu_mem_time_sum: list[StatRow]
    cuda_gpu_mem_size_sum: list[StatRow]
    nvtx_sum: list[StatRow]
    nvtx_gpu_proj_sum: list[ProjRow]
    osrt_sum: list[StatRow]
    nccl_sum: list[StatRow] = field(default_factory=list)  # NVTX ranges of the NCCL domain


def _rows(st: GroupStats, labels: list[str], *, pct: bool = True,
          styles: list[str | None] | None = None,
          mangled: list[str | None] | None = None) -> list[StatRow]:
    grand = float(st.total.sum())
    out = [
        StatRow(
            name=labels[i],
            time_pct=100.0 * float(st.total[i]) / grand if pct and grand > 0 else 0.0,
            total=int(st.total[i]), count=int(st.count[i]), avg=float(st.mean[i]),
            med=float(st.median[i]), min=int(st.minimum[i]), max=int(st.maximum[i]),
            stddev=float(st.stddev[i]),
            style=styles[i] if styles else None, mangled=mangled[i] if mangled else None,
        )
        for i in range(len(st.keys))
    ]
    out.sort(key=lambda r: (-r.total, r.name))
    return out


def _by_name(trace: Trace, names: npt.NDArray[np.int32], values: I64) -> list[StatRow]:
    st = group_stats(names.astype(np.int64), values)
    return _rows(st, [trace.name(int(k)) for k in st.keys])


def _copy_kinds(trace: Trace) -> I64:
    """CUPTI copy kind per device op (-1 when not a memcpy)."""
    dev = trace.device
    if len(trace.device_details) == len(dev) and len(dev):
        return trace.device_details.copy_kind.astype(np.int64)
    uniq, inv = np.unique(dev.name, return_inverse=True)
    kinds = []
    for nid in uniq.tolist():
        parts = trace.name(int(nid)).split()
        kinds.append(_SHORT_TO_KIND.get(parts[1], 0) if len(parts) > 1 else 0)
    out = np.array(kinds, np.int64)[inv.reshape(-1)] if len(dev) else np.empty(0, np.int64)
    return np.where(dev.kind == DEV_MEMCPY, out, -1)


def _kernels(trace: Trace) -> list[StatRow]:
    dev = trace.device
    sel = dev.kind == DEV_KERNEL
    st = group_stats(dev.name[sel].astype(np.int64), dev.dur[sel])
    mangled: list[str | None] = [None] * len(st.keys)
    det = trace.device_details
    if len(det) == len(dev) and len(dev):
        m = det.mangled[sel]
        have = m >= 0
        first = lookup(st.keys, dev.name[sel][have].astype(np.int64))
        mids = m[have]
        mangled = [trace.name(int(mids[j])) if j >= 0 else None for j in first.tolist()]
    return _rows(st, [trace.name(int(k)) for k in st.keys], mangled=mangled)


def _memory(trace: Trace) -> tuple[list[StatRow], list[StatRow]]:
    dev = trace.device
    kinds = _copy_kinds(trace)
    sel = (dev.kind == DEV_MEMCPY) | (dev.kind == DEV_MEMSET)
    key = np.where(dev.kind == DEV_MEMSET, 100, kinds)[sel]

    def label(k: int) -> str:
        return "[CUDA memset]" if k == 100 else f"[CUDA memcpy {COPY_LABELS.get(k, 'Unknown')}]"

    st_t = group_stats(key, dev.dur[sel])
    st_b = group_stats(key, dev.bytes[sel])
    return (_rows(st_t, [label(int(k)) for k in st_t.keys]),
            _rows(st_b, [label(int(k)) for k in st_b.keys], pct=False))


def nvtx_keys(trace: Trace) -> I64:
    """Group key per NVTX range: domain, name and style (push/pop or start/end)."""
    nv = trace.nvtx
    return ((nv.domain.astype(np.int64) + 1) * (1 << 33) + (nv.name.astype(np.int64) + 1) * 2
            + nv.style)


def _label_of(trace: Trace, key: int) -> tuple[str, str]:
    dom, rest = divmod(key, 1 << 33)
    name, style = divmod(rest, 2)
    text = trace.name(int(name) - 1)
    if dom - 1 >= 0:
        text = f"{trace.name(int(dom - 1))}:{text}"
    return text, STYLES.get(int(style), "PushPop")


def _nvtx(trace: Trace, domain: str | None = None) -> list[StatRow]:
    """nvtx_sum; with ``domain``, only that domain's ranges (nsys recipe nccl_sum)."""
    key = nvtx_keys(trace)
    dur = trace.nvtx.dur
    if domain is not None:
        dom = trace.nvtx.domain
        ids = [i for i, s in enumerate(trace.strings) if s == domain]
        sel = np.isin(dom, np.array(ids, dtype=np.int32)) if ids else np.zeros(len(dom), bool)
        key, dur = key[sel], dur[sel]
    st = group_stats(key, dur)
    labels = [_label_of(trace, int(k)) for k in st.keys]
    return _rows(st, [n for n, _ in labels], styles=[s for _, s in labels])


def _sparse_table(values: I64, op: np.ufunc) -> list[I64]:
    levels = [values]
    step = 1
    while 2 * step <= len(values):
        prev = levels[-1]
        levels.append(op(prev[:-step], prev[step:]))
        step *= 2
    return levels


def _range_query(levels: list[I64], lo: I64, hi: I64, op: np.ufunc, fill: int) -> I64:
    """op over values[lo:hi] for each (lo, hi); ``fill`` where empty."""
    n = hi - lo
    out = np.full(len(lo), fill, np.int64)
    ok = n > 0
    if not ok.any():
        return out
    k = np.floor(np.log2(np.maximum(n[ok], 1))).astype(np.int64)
    a = lo[ok]
    b = hi[ok] - (1 << k)
    res = np.empty(len(a), np.int64)
    for lvl in np.unique(k).tolist():
        m = k == lvl
        res[m] = op(levels[lvl][a[m]], levels[lvl][b[m]])
    out[ok] = res
    return out


def _projection(trace: Trace) -> list[ProjRow]:
    """Each range's GPU ops: those launched by an API call starting inside the range on
    the range's thread; projected range = [first op start, last op end]."""
    nv, rt, dev = trace.nvtx, trace.runtime, trace.device
    if not len(nv) or not len(rt) or not len(dev):
        return []
    call = lookup(dev.correlation, rt.correlation)
    has = call >= 0
    n_rt = len(rt)
    ops = np.bincount(call[has], minlength=n_rt).astype(np.int64)
    first = np.full(n_rt, np.iinfo(np.int64).max)
    last = np.full(n_rt, np.iinfo(np.int64).min)
    np.minimum.at(first, call[has], dev.ts[has])
    np.maximum.at(last, call[has], dev.end[has])
    calls = np.flatnonzero(ops > 0)
    if not len(calls):
        return []
    thread_rt = rt.pid[calls].astype(np.int64) * (1 << 31) + rt.tid[calls]
    thread_nv = nv.pid.astype(np.int64) * (1 << 31) + nv.tid
    _, inv = np.unique(np.concatenate((thread_rt, thread_nv)), return_inverse=True)
    inv = inv.reshape(-1)
    r_rt, r_nv = inv[: len(calls)], inv[len(calls):]
    tmin = int(min(rt.ts.min(), nv.ts.min()))
    span = int(max(rt.ts.max(), nv.end.max())) - tmin + 2
    if (int(inv.max()) + 1) * span >= 1 << 62:  # (thread, time) would not pack into int64
        return []  # (a span of centuries: a corrupt export; real ones are hours at most)
    comp = r_rt * span + (rt.ts[calls] - tmin)
    order = np.argsort(comp, kind="stable")
    comp, calls = comp[order], calls[order]
    lo = np.searchsorted(comp, r_nv * span + (nv.ts - tmin), side="left")
    hi = np.searchsorted(comp, r_nv * span + (nv.end - tmin), side="right")
    prefix = np.r_[0, np.cumsum(ops[calls])]
    n_ops = prefix[hi] - prefix[lo]
    mins = _range_query(_sparse_table(first[calls], np.minimum), lo, hi, np.minimum, 0)
    maxs = _range_query(_sparse_table(last[calls], np.maximum), lo, hi, np.maximum, 0)
    keep = n_ops > 0
    if not keep.any():
        return []
    key = nvtx_keys(trace)
    proj = (maxs - mins)[keep]
    st = group_stats(key[keep], proj)
    rng = group_stats(key[keep], nv.dur[keep])
    opsum = group_stats(key[keep], n_ops[keep])
    level, kids = nvtx_levels(trace)
    lvl = group_stats(key[keep], level[keep])
    child = group_stats(key[keep], kids[keep])
    rows = []
    for i, k in enumerate(st.keys.tolist()):
        name, style = _label_of(trace, int(k))
        rows.append(ProjRow(
            name=name, style=style, total_proj_ns=int(st.total[i]),
            total_range_ns=int(rng.total[i]), instances=int(st.count[i]),
            proj_avg_ns=float(st.mean[i]), proj_med_ns=float(st.median[i]),
            proj_min_ns=int(st.minimum[i]), proj_max_ns=int(st.maximum[i]),
            proj_stddev_ns=float(st.stddev[i]), total_gpu_ops=int(opsum.total[i]),
            avg_gpu_ops=float(opsum.mean[i]), avg_range_lvl=float(lvl.mean[i]),
            avg_num_child=float(child.mean[i]),
        ))
    rows.sort(key=lambda r: (-r.total_proj_ns, r.name))
    return rows


def nsys_stats(trace: Trace) -> NsysStats:
    mem_time, mem_size = _memory(trace)
    return NsysStats(
        cuda_api_sum=_by_name(trace, trace.runtime.name, trace.runtime.dur),
        cuda_gpu_kern_sum=_kernels(trace),
        cuda_gpu_mem_time_sum=mem_time,
        cuda_gpu_mem_size_sum=mem_size,
        nvtx_sum=_nvtx(trace),
        nvtx_gpu_proj_sum=_projection(trace),
        osrt_sum=_by_name(trace, trace.osrt.name, trace.osrt.dur),
        nccl_sum=_nvtx(trace, "NCCL"),
    )


