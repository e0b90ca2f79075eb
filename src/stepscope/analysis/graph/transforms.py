"""What-if transformations of a replay graph (docs/whatif.md): each changes edge weights
or removes cross edges, and says how many events it touched. Durations of untouched work
are kept; the re-timing (solve.longest) then respects every remaining dependency."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import Graph
from stepscope.classify import names
from stepscope.errors import UsageError
from stepscope.model.trace import Trace

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]

# With CUDA graphs the device runs captured kernels back to back: gaps of about a
# microsecond remain (the graph's own scheduling); a gap already shorter stays as it was.
GRAPH_GAP_NS = 1_000
# GEMM/convolution kernels off the Tensor Cores, moved onto them (TF32/BF16/FP16): the peak
# ratio is 8x or more (A100: 19.5 FP32 vs 156 TF32 TFLOP/s); achieved GEMM speed-ups are
# lower, so the preset halves their time (override with scale_kernels:PATTERN=K).
TENSOR_CORE_FACTOR = 0.5
FIRST_LAUNCH_NS = 1_000_000
POINTWISE_TOKENS = ("elementwise_kernel", "vectorized_elementwise", "unrolled_elementwise",
                    "triton_poi")


@dataclass
class Edit:
    """The mutable weights of one replay (copies of the graph's)."""

    w: I64
    xw: I64
    xkeep: B
    finish: list[tuple[I64, I64]]  # (start node, duration): work that must end in the step


@dataclass(frozen=True)
class Transform:
    spec: str  # as given: "drop_sync", "scale_kernels:gemm=0.5", ...
    name: str
    apply: Callable[[Trace, Links, Graph, Edit], int]


def _positions_into_end(g: Graph, events: I64) -> I64:
    """Chain positions of the edge into each event's end node (its own time, for leaves)."""
    pos = np.empty(2 * g.events, dtype=np.int64)
    pos[g.order] = np.arange(len(g.order))
    return pos[2 * events + 1]


def _name_mask(trace: Trace, g: Graph, fam: int, pred: Callable[[str], object]) -> B:
    out = np.zeros(g.events, dtype=bool)
    sel = np.flatnonzero(g.fam == fam)
    table = trace.host if fam == K.HOST else trace.runtime if fam == K.RUNTIME else trace.device
    out[sel] = trace.string_ids(pred)[table.name[g.row[sel]]]
    return out


def _drop_dataloader(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
    owned = (g.owner >= 0) & (g.ev_cat[np.maximum(g.owner, 0)] == K.DATA_LOADING)
    e.w[owned] = 0
    return int(np.count_nonzero(_name_mask(trace, g, K.HOST, names.is_dataloader)))


def _free_calls(g: Graph, e: Edit, calls: I64) -> None:
    """The calls stop waiting: their sync edges go and they take no host time."""
    if len(calls) == 0:
        return
    hit = np.zeros(g.events, dtype=bool)
    hit[calls] = True
    e.xkeep &= ~((g.xkind == K.SYNC) & hit[g.xd // 2])
    e.w[_positions_into_end(g, calls)] = 0


def _sync_filter(trace: Trace, links: Links, g: Graph, pattern: str | None) -> B:
    if not pattern:
        return np.ones(g.events, dtype=bool)
    rx = _regex(pattern)
    ok = _name_mask(trace, g, K.RUNTIME, rx.search)
    rt = np.flatnonzero(g.fam == K.RUNTIME)
    owner = links.runtime_host[g.row[rt]]
    host_ok = trace.string_ids(rx.search)[trace.host.name[np.maximum(owner, 0)]] & (owner >= 0)
    ok[rt] |= host_ok
    return ok


def _drop_sync(pattern: str | None) -> Callable[[Trace, Links, Graph, Edit], int]:
    def apply(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
        pure = (g.fam == K.RUNTIME) & (g.ev_cat == K.SYNC_CAT)
        # calls that copy device -> host (.item(), .cpu()): they wait for the stream
        dtoh = np.zeros(g.events, dtype=bool)
        dtoh[_launchers(trace, links, g, _name_mask(trace, g, K.DEVICE, _is_dtoh))] = True
        calls = np.flatnonzero((pure | dtoh) & _sync_filter(trace, links, g, pattern))
        _free_calls(g, e, calls)
        return len(calls)
    return apply


def _launchers(trace: Trace, links: Links, g: Graph, ops: B) -> I64:
    """Runtime events (of the graph) that launched the device events ``ops``."""
    rt = np.flatnonzero(g.fam == K.RUNTIME)
    rt_event = np.full(len(trace.runtime) + 1, -1, dtype=np.int64)
    rt_event[g.row[rt]] = rt
    dev = np.flatnonzero(ops & (g.fam == K.DEVICE))
    call = links.device_runtime[g.row[dev]]
    ev = rt_event[np.where(call >= 0, call, len(trace.runtime))]
    return np.unique(ev[ev >= 0])


def _is_dtoh(name: str) -> bool:
    return "DtoH" in name or "Device -> Pageable" in name


def _is_htod(name: str) -> bool:
    return "HtoD" in name


def _async_h2d(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
    """Host->device copies made asynchronous from pinned memory: the calls that launched a
    pageable host->device copy, or waited for their own host->device copy, stop waiting and
    cost the host what a launch costs in this window (the median launching call); the copy
    keeps its duration."""
    rt = np.flatnonzero(g.fam == K.RUNTIME)
    dev = np.flatnonzero(g.fam == K.DEVICE)
    htod = _name_mask(trace, g, K.DEVICE, _is_htod)
    pageable = _name_mask(trace, g, K.DEVICE, names.is_pageable_copy)
    # the runtime event of each device op (rows -> events)
    rt_event = np.full(len(trace.runtime), -1, dtype=np.int64)
    rt_event[g.row[rt]] = rt
    launcher = rt_event[np.maximum(links.device_runtime[g.row[dev]], 0)]
    waited_own = np.zeros(g.events, dtype=bool)
    w = np.flatnonzero(g.waited >= 0)
    waited_own[w[g.waited[w] >= 0]] = True
    target = htod[dev] & (launcher >= 0)
    target &= pageable[dev] | (waited_own[np.maximum(launcher, 0)]
                               & (g.waited[np.maximum(launcher, 0)] == dev))
    calls = np.unique(launcher[target])
    if len(calls) == 0:
        return 0
    cost = _launch_cost(trace, links, g)
    hit = np.zeros(g.events, dtype=bool)
    hit[calls] = True
    e.xkeep &= ~((g.xkind == K.SYNC) & hit[g.xd // 2])
    p = _positions_into_end(g, calls)
    e.w[p] = np.minimum(e.w[p], cost)
    return len(calls)


def _launch_cost(trace: Trace, links: Links, g: Graph) -> int:
    """Median host time of the window's kernel launches (cudaLaunchKernel and the like)."""
    calls = _launch_calls(trace, links, g)
    kernel_calls = calls[_name_mask(trace, g, K.RUNTIME, names.is_launch_call)[calls]
                         & ~_name_mask(trace, g, K.RUNTIME, _is_copy_call)[calls]]
    if len(kernel_calls) == 0:
        return 0
    return int(np.median(g.ts[2 * kernel_calls + 1] - g.ts[2 * kernel_calls]))


def _is_copy_call(name: str) -> bool:
    return name in names.COPY_CALLS


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"bad kernel pattern {pattern!r}: {exc}") from exc


def _scale(pred: Callable[[str], object], factor: float) -> Callable[[Trace, Links, Graph, Edit],
                                                                    int]:
    def apply(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
        ops = np.flatnonzero(_name_mask(trace, g, K.DEVICE, pred))
        p = _positions_into_end(g, ops)
        e.w[p] = np.rint(e.w[p] * factor).astype(np.int64)
        return len(ops)
    return apply


def _off_tensor_cores(name: str) -> bool:
    return names.is_gemm_or_conv_kernel(name) and not names.is_tensor_core_kernel(name)


def _launch_calls(trace: Trace, links: Links, g: Graph) -> I64:
    launching = np.zeros(len(trace.runtime), dtype=bool)
    dr = links.device_runtime[g.row[g.fam == K.DEVICE]]
    launching[dr[dr >= 0]] = True
    rt = np.flatnonzero(g.fam == K.RUNTIME)
    return rt[launching[g.row[rt]]]


def _remove_launch_overhead(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
    calls = _launch_calls(trace, links, g)
    # a launch call of a millisecond or more is a first launch (module loading, JIT), not
    # launch overhead (the launch-bound rule's cut, docs/advice.md rule 6): it stays
    calls = calls[g.ts[2 * calls + 1] - g.ts[2 * calls] < FIRST_LAUNCH_NS]
    e.w[_positions_into_end(g, calls)] = 0
    e.xw[g.xkind == K.LAUNCH] = 0
    kk = g.kind == K.KERNEL_KERNEL
    e.w[kk] = np.minimum(e.w[kk], GRAPH_GAP_NS)
    return len(calls)


def _is_pointwise(name: str) -> bool:
    return any(t in name for t in POINTWISE_TOKENS)


def _fuse(select: Callable[[Trace, Links, Graph], B]) -> Callable[[Trace, Links, Graph, Edit],
                                                                 int]:
    """Ops ``select`` picks that follow another picked op on their stream join it: no gap,
    no launch of their own (the call takes no host time, the launch edge goes), the same
    duration (the same bytes)."""
    def apply(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
        pick = select(trace, links, g)
        pos = np.empty(2 * g.events, dtype=np.int64)
        pos[g.order] = np.arange(len(g.order))
        dev = np.flatnonzero(pick)
        p_start = pos[2 * dev]
        has_prev = ~g.first[p_start]
        prev_ev = g.order[np.maximum(p_start - 1, 0)] // 2
        fused = dev[has_prev & pick[prev_ev]]
        if len(fused) == 0:
            return 0
        e.w[pos[2 * fused]] = 0  # no gap: one kernel
        f = np.zeros(g.events, dtype=bool)
        f[fused] = True
        e.xkeep &= ~((g.xkind == K.LAUNCH) & f[g.xd // 2])  # launched with the first
        rt_rows = links.device_runtime[g.row[fused]]
        rt_ev = np.flatnonzero(g.fam == K.RUNTIME)
        calls = rt_ev[np.isin(g.row[rt_ev], rt_rows)]
        e.w[_positions_into_end(g, calls)] = 0
        return len(fused)
    return apply


def _pointwise_ops(trace: Trace, links: Links, g: Graph) -> B:
    """Pointwise kernels outside optimizer steps: compiling the model fuses these; the
    optimizer's own are fuse_optimizer's (a fused or foreach optimizer)."""
    return _name_mask(trace, g, K.DEVICE, _is_pointwise) & ~_optimizer_ops(trace, links, g)


def _optimizer_ops(trace: Trace, links: Links, g: Graph) -> B:
    """Device ops launched inside an ``Optimizer.step#`` range on the launching thread: a
    foreach or fused optimizer runs them as a few multi-tensor kernels."""
    host, rt = trace.host, trace.runtime
    out = np.zeros(g.events, dtype=bool)
    opt = np.flatnonzero(names.mask(trace, names.is_optimizer_step)[host.name])
    dev = np.flatnonzero(g.fam == K.DEVICE)
    if len(opt) == 0 or len(dev) == 0:
        return out
    call = links.device_runtime[g.row[dev]]
    c = np.maximum(call, 0)
    out[dev] = (call >= 0) & iv.within_ranges(host.ts[opt], host.end[opt], host.tid[opt],
                                              rt.ts[c], rt.end[c], rt.tid[c])
    return out


def _overlap_comm(trace: Trace, links: Links, g: Graph, e: Edit) -> int:
    """Collectives stop holding up compute (no sync or wait edges out of them), start as
    soon as they are launched (a launch delay longer than the trace's median launch latency
    is a wait for the compute before them: dropped), and must still end within the step."""
    comm = g.ev_cat == K.COMMUNICATION
    src_comm = comm[g.xs // 2]
    e.xkeep &= ~(src_comm & ((g.xkind == K.SYNC) | (g.xkind == K.WAIT)))
    into = ((g.xkind == K.LAUNCH) | (g.xkind == K.ISSUE)) & comm[g.xd // 2]
    e.xw[into] = np.minimum(e.xw[into], g.launch_ns)
    e.xkeep &= ~((g.xkind == K.WAIT) & comm[g.xd // 2])
    host = np.flatnonzero(comm & (g.fam != K.DEVICE))
    owned = (g.owner >= 0) & comm[np.maximum(g.owner, 0)] & (g.fam[np.maximum(g.owner, 0)]
                                                               != K.DEVICE)
    e.w[owned] = 0
    if len(host):  # the collective still runs: it must end before the step does
        e.finish.append((2 * host, g.ts[2 * host + 1] - g.ts[2 * host]))
    return int(np.count_nonzero(comm))


PRESETS = {"tensor_cores": (_off_tensor_cores, TENSOR_CORE_FACTOR)}
SIMPLE: dict[str, Callable[[Trace, Links, Graph, Edit], int]] = {
    "drop_dataloader_wait": _drop_dataloader,
    "async_h2d": _async_h2d,
    "remove_launch_overhead": _remove_launch_overhead,
    "fuse_elementwise": _fuse(_pointwise_ops),
    "fuse_optimizer": _fuse(_optimizer_ops),
    "overlap_comm": _overlap_comm,
}
NAMES = ("drop_dataloader_wait", "drop_sync", "async_h2d", "scale_kernels",
         "remove_launch_overhead", "fuse_elementwise", "fuse_optimizer", "overlap_comm")


def parse(spec: str) -> Transform:
    """``NAME`` or ``drop_sync:PATTERN`` or ``scale_kernels:PATTERN=K`` /
    ``scale_kernels:tensor_cores``."""
    name, _, arg = spec.partition(":")
    if name in SIMPLE and not arg:
        return Transform(spec, name, SIMPLE[name])
    if name == "drop_sync":
        return Transform(spec, name, _drop_sync(arg or None))
    if name == "scale_kernels":
        if arg in PRESETS:
            pred, k = PRESETS[arg]
            return Transform(spec, name, _scale(pred, k))
        pattern, eq, factor = arg.rpartition("=")
        try:
            k = float(factor)
        except ValueError:
            k = -1.0
        if not eq or not pattern or not k > 0:
            raise UsageError(f"{spec!r}: expected scale_kernels:PATTERN=K (K > 0) or "
                             f"scale_kernels:{'|'.join(PRESETS)}")
        return Transform(spec, name, _scale(_regex(pattern).search, k))
    raise UsageError(f"unknown transform {spec!r} (transforms: {', '.join(NAMES)})")
