"""The dependency graph of one window of one trace, built from the columnar tables.

Every event (host operator, runtime call, device op) has two nodes, its start (node 2i)
and its end (2i+1). Nodes sit on *chains*: one per host thread (the endpoints of its
ranges in time order, which is the depth-first order of the call tree) and one per device
stream (start, end, next start, ...). Chain edges join consecutive endpoints; cross edges
join chains: launch (runtime call -> device op), sync (device op -> the host call that
waited for it). Definitions and their sources: docs/metrics.md "Critical path".

Two weightings share the structure (``mode``):
- ``"hta"``: HTA 0.5.0's critical-path graph (zero-weight dependency edges between
  top-level ranges, zero-weight ends of blocking calls, a launch edge only when the stream
  was idle at the launch, otherwise a kernel-kernel edge);
- ``"replay"``: every edge keeps the time it took in the trace (host gaps included), so
  re-timing the unmodified graph reproduces the trace (docs/whatif.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.intervals import length, nest_sorted, union
from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.native import chains_native
from stepscope.classify import names
from stepscope.model.trace import HOST_OP, Trace

I64 = npt.NDArray[np.int64]
I8 = npt.NDArray[np.int8]
B = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Graph:
    """Events, chains (``order`` of node ids, ``first``: a chain or segment starts there,
    ``w``/``kind``/``owner``/``cat`` of the edge into each position) and cross edges."""

    t0: int  # window start, ns: node times are relative to it
    fam: I8  # per event: kinds.HOST | RUNTIME | DEVICE
    row: I64  # row in the family's table
    ts: I64  # per node, ns relative to t0
    lane: I64  # per event: thread string id (host, runtime) or stream (device)
    ev_cat: I8  # per event: the category of its own time
    order: I64
    first: B
    w: I64
    kind: I8
    owner: I64
    xs: I64
    xd: I64
    xw: I64
    xkind: I8
    xowner: I64
    waited: I64  # per event: the device event a waiting runtime call waited for, else -1
    launch_ns: int = 0  # replay: the median launch latency onto an idle stream

    @property
    def events(self) -> int:
        return len(self.fam)

    @property
    def cat(self) -> I8:
        """Category of the edge into each chain position (NO_CATEGORY: zero-weight link)."""
        return self.cat_at(np.arange(len(self.order)))

    def cat_at(self, pos: I64) -> I8:
        """:attr:`cat` of the positions ``pos`` only (a path: no pass over every position)."""
        owner, kind = self.owner[pos], self.kind[pos]
        out: I8 = self.ev_cat[np.maximum(owner, 0)]
        out[owner < 0] = K.NO_CATEGORY
        # a timed gap between top-level ranges is host time outside operators (Python)
        out[(kind == K.DEPENDENCY) & (owner < 0) & (self.w[pos] > 0)] = K.CPU
        out[kind == K.KERNEL_KERNEL] = K.KERNEL_TO_KERNEL
        out[kind == K.ORDER] = K.NO_CATEGORY
        return out

    @property
    def xcat(self) -> I8:
        return self.xcat_at(np.arange(len(self.xs)))

    def xcat_at(self, cross: I64) -> I8:
        kind = self.xkind[cross]
        out = np.full(len(cross), K.SYNC_CAT, dtype=np.int8)
        out[kind == K.LAUNCH] = K.LAUNCH_OVERHEAD
        out[kind == K.ISSUE] = K.COMMUNICATION  # queued for the backend's thread
        return out


@dataclass(frozen=True)
class Index:
    """What every window of one trace shares, computed once: device ops ordered by their
    launching call, HTA's queue lengths, the DataLoader ranges."""

    dev_by_rt: I64  # device rows with a launching call, by that call's row
    rt_of_sorted: I64  # their calls' rows, ascending
    q_rt: I64
    q_k: I64
    dataloader: I64  # host rows of DataLoader ranges


def index(trace: Trace, links: Links) -> Index:
    d_rt = links.device_runtime
    launched = np.flatnonzero(d_rt >= 0)
    o = launched[np.argsort(d_rt[launched], kind="stable")]
    q_rt, q_k = _queue_idle(trace, links)
    dl = np.flatnonzero(names.mask(trace, names.is_dataloader)[trace.host.name])
    return Index(o.astype(np.int64), d_rt[o], q_rt, q_k, dl.astype(np.int64))


def _select(trace: Trace, ix: Index, ws: int, we: int, mode: str,
            extra_host: I64 | None = None) -> tuple[I64, I64, I64]:
    host, rt, dev = trace.host, trace.runtime, trace.device
    lo, hi = np.searchsorted(host.ts, [ws, we], side="left")[0], np.searchsorted(
        host.ts, we, side="right")
    h = np.arange(lo, hi, dtype=np.int64)
    keep = (host.kind[h] == HOST_OP) & (host.dur[h] > 0)
    if mode == "replay":  # DataLoader ranges are annotations in torch 2.x: the wait itself
        keep |= names.mask(trace, names.is_dataloader)[host.name[h]] & (host.dur[h] > 0)
        # ProfilerStep#N is a cpu_op in torch 1.x: a marker around the step, not work
        keep &= ~names.mask(trace, names.is_profiler_step)[host.name[h]]
    if extra_host is not None and len(extra_host):  # e.g. gloo's work ranges (a run's graph)
        keep |= np.isin(h, extra_host) & (host.dur[h] > 0)
    h = h[keep]
    r0, r1 = int(np.searchsorted(rt.ts, ws, side="left")), int(np.searchsorted(rt.ts, we,
                                                                              side="right"))
    r = np.arange(r0, r1, dtype=np.int64)
    r = r[rt.dur[r] > 0]
    a, b = np.searchsorted(ix.rt_of_sorted, [r0, r1], side="left")
    d = ix.dev_by_rt[a:b]
    d = d[rt.dur[ix.rt_of_sorted[a:b]] > 0]
    d = d[np.lexsort((dev.ts[d], dev.stream[d], dev.device[d]))]
    return h, r, d


def _host_chains(trace: Trace, n_h: int, ev_ts: I64, ev_end: I64, ev_lane: I64,
                 blocking_end: B, hta: bool) -> tuple[I64, B, I64, I8, I64]:
    """Chains of the host threads: (order, first, w, kind, owner) over host+runtime events
    (event ids 0..n_h-1)."""
    if n_h == 0:
        z = np.empty(0, dtype=np.int64)
        return z, np.empty(0, bool), z, np.empty(0, np.int8), z
    ev = np.lexsort((-ev_end[:n_h], ev_ts[:n_h], ev_lane[:n_h]))
    depth = np.zeros(n_h, dtype=np.int64)
    parent = np.full(n_h, -1, dtype=np.int64)
    lanes = ev_lane[ev]
    bounds = np.flatnonzero(np.diff(lanes)) + 1
    lane_rank = np.empty(n_h, dtype=np.int64)  # the lanes numbered 0.. in sorted order
    lane_rank[ev] = np.cumsum(np.concatenate(([0], lanes[1:] != lanes[:-1])))
    for part in np.split(ev, bounds):  # one pass per thread
        d, up = nest_sorted(ev_ts[part], ev_end[part])
        depth[part] = d
        parent[part[up >= 0]] = part[up[up >= 0]]
    native = chains_native(ev, depth, parent, ev_ts[:n_h], ev_end[:n_h], ev_lane[:n_h],
                           blocking_end, hta, K.DEPENDENCY, K.OPERATOR)
    if native is not None:  # the same in one pass (longest.c), without the sort below
        return native
    # endpoints: at equal times ends before starts, inner ends first, outer starts first
    node = np.concatenate((2 * np.arange(n_h), 2 * np.arange(n_h) + 1))
    e = node // 2
    is_start = node % 2 == 0
    t = np.where(is_start, ev_ts[e], ev_end[e])
    sub = np.where(is_start, depth[e], -depth[e])
    order = node[_node_order(lane_rank[e], t, is_start, sub)]
    oe = order // 2
    ostart = order % 2 == 0
    first = np.ones(len(order), dtype=bool)
    first[1:] = ev_lane[oe[1:]] != ev_lane[oe[:-1]]
    prev = np.roll(order, 1)
    pe, pstart = prev // 2, prev % 2 == 0
    dependency = ~pstart & ostart & (depth[pe] == 0) & (depth[oe] == 0)
    kind = np.where(dependency, K.DEPENDENCY, K.OPERATOR).astype(np.int8)
    gap = np.where(ostart, ev_ts[oe], ev_end[oe]) - np.where(pstart, ev_ts[pe], ev_end[pe])
    w = np.maximum(gap, 0)
    if hta:
        w[dependency] = 0
        w[~ostart & blocking_end[oe]] = 0
    # attribution (HTA's rule): from a start -> that event; into an end -> that event;
    # end -> start -> the parent of the event that ended
    owner = np.where(pstart, pe, np.where(~ostart, oe, parent[pe]))
    owner[dependency] = np.where(hta, -1, parent[pe][dependency])
    w[first] = 0
    kind[first] = K.DEPENDENCY
    owner[first] = -1
    return order, first, w, kind, owner


def _node_order(rank: I64, t: I64, is_start: B, sub: I64) -> I64:
    """``np.lexsort((sub, is_start, t, rank))``, as one stable argsort of the keys packed
    into an int64 when they fit (the same permutation, ~3x faster on millions of nodes)."""
    if len(t) == 0:
        return np.empty(0, dtype=np.int64)
    t0, s0 = int(t.min()), int(sub.min())
    bits_t = (int(t.max()) - t0).bit_length()
    bits_s = (int(sub.max()) - s0).bit_length()
    if int(rank.max()).bit_length() + bits_t + 1 + bits_s > 62:
        return np.lexsort((sub, is_start, t, rank))
    key = (((rank << bits_t) | (t - t0)) << 1 | is_start.astype(np.int64)) << bits_s
    out: I64 = np.argsort(key | (sub - s0), kind="stable")
    return out


def _queue_idle(trace: Trace, links: Links) -> tuple[I64, I64]:
    """HTA's queue length per device op at its launch and at its start (per stream:
    +1 at the launching call, -1 at the op's start, cumulative), -1 if unlaunched."""
    dev, rt = trace.device, trace.runtime
    d_rt = links.device_runtime
    launched = np.flatnonzero(d_rt >= 0)
    n = len(launched)
    q_rt = np.full(len(dev), -1, dtype=np.int64)
    q_k = np.full(len(dev), -1, dtype=np.int64)
    if n == 0:
        return q_rt, q_k
    stream = np.concatenate((dev.stream[launched], dev.stream[launched]))
    t = np.concatenate((rt.ts[d_rt[launched]], dev.ts[launched]))
    delta = np.concatenate((np.ones(n, np.int64), -np.ones(n, np.int64)))
    o = np.lexsort((-delta, t, stream))
    s = stream[o]
    cs = np.cumsum(delta[o])
    seg = np.ones(len(o), dtype=bool)
    seg[1:] = s[1:] != s[:-1]
    base = np.maximum.accumulate(np.where(seg, np.arange(len(o)), 0))
    q = cs - (cs[base] - delta[o][base])
    pos = np.empty(len(o), dtype=np.int64)
    pos[o] = np.arange(len(o))
    q_rt[launched] = q[pos[:n]]
    q_k[launched] = q[pos[n:]]
    return q_rt, q_k


def build(trace: Trace, links: Links, ws: int, we: int, mode: str = "hta",
          ix: Index | None = None, extra_host: I64 | None = None) -> Graph:
    """The graph of the events in ``[ws, we]`` (host ranges and runtime calls starting in
    it, device ops launched by those calls), as HTA 0.5.0 clips a window. ``extra_host``:
    host rows to take although they are not operators (a run's collectives on CPU: the
    backend's work ranges, analysis/graph/hostcomm.py)."""
    hta = mode == "hta"
    host, rt, dev = trace.host, trace.runtime, trace.device
    ix = ix or index(trace, links)
    h, r, d = _select(trace, ix, ws, we, mode, extra_host)
    n_h = len(h) + len(r)
    fam = np.concatenate((np.full(len(h), K.HOST), np.full(len(r), K.RUNTIME),
                          np.full(len(d), K.DEVICE))).astype(np.int8)
    row = np.concatenate((h, r, d)).astype(np.int64)
    ev_ts = np.concatenate((host.ts[h], rt.ts[r], dev.ts[d])) - ws
    # ends of the selected rows only (Table.end would add the whole columns)
    ev_end = np.concatenate((host.ts[h] + host.dur[h], rt.ts[r] + rt.dur[r],
                             dev.ts[d] + dev.dur[d])) - ws
    ev_lane = np.concatenate((host.tid[h].astype(np.int64) * 4096 + host.pid[h],
                              rt.tid[r].astype(np.int64) * 4096 + rt.pid[r],
                              dev.stream[d] * 4096 + dev.device[d]))
    n = len(fam)
    rt_names = rt.name[r]
    blocking = np.zeros(n, dtype=bool)
    blocking[len(h):n_h] = trace.string_ids(K.is_hta_blocking)[rt_names]

    # event categories
    ev_cat = np.full(n, K.CPU, dtype=np.int8)
    ev_cat[len(h):n_h][trace.string_ids(K.is_sync_call)[rt_names]] = K.SYNC_CAT
    is_comm = names.mask(trace, names.is_collective_host)[host.name[h]]
    ev_cat[: len(h)][is_comm] = K.COMMUNICATION
    ev_cat[n_h:] = np.where(names.mask(trace, names.is_collective_kernel)[dev.name[d]],
                            K.COMMUNICATION, K.GPU_COMPUTE)
    ev_cat[:n_h][_in_dataloader(trace, ix.dataloader, ev_ts[:n_h] + ws, ev_end[:n_h] + ws,
                                np.concatenate((host.tid[h], rt.tid[r])))] = K.DATA_LOADING

    host_lane = ev_lane[:n_h] if hta else _merge_threads(ev_lane[:n_h], ev_ts[:n_h],
                                                          ev_end[:n_h], len(h), r, links, d)
    ho, hf, hw, hk, hown = _host_chains(trace, n_h, ev_ts, ev_end, host_lane, blocking, hta)

    # device chains: start_k (in-edge from end_{k-1}), end_k (in-edge from start_k)
    dev_ev = np.arange(n_h, n, dtype=np.int64)
    lane_d = ev_lane[dev_ev]
    new_lane = np.ones(len(d), dtype=bool)
    new_lane[1:] = lane_d[1:] != lane_d[:-1]
    prev_end = np.where(new_lane, np.iinfo(np.int64).min, np.roll(ev_end[dev_ev], 1))
    rt_of = links.device_runtime[d]
    rt_local = np.searchsorted(r, rt_of)  # r is sorted: the runtime event of each device op
    launch_ev = len(h) + rt_local
    launch_ts = ev_ts[launch_ev]
    idle = new_lane | (prev_end < launch_ts)  # the stream had finished when launched
    gap = np.where(new_lane, 0, ev_ts[dev_ev] - prev_end)
    w_src = _stream_waits(trace, r, len(h), dev_ev, rt_local, ev_ts, ev_lane)
    has_wait = w_src >= 0
    wait_end = np.where(has_wait, ev_end[np.maximum(w_src, 0)], np.iinfo(np.int64).min)
    # HTA: a launch edge needs the awaited op done before the launch; the previous op's
    # gap only counts when the awaited op finished before the previous op
    idle &= wait_end < launch_ts
    if hta:
        q_rt, q_k = ix.q_rt, ix.q_k
        launch_rt_names = trace.string_ids(K.is_hta_launch)[rt.name[rt_of]]
        use_launch = idle & (q_rt[d] == 1) & (q_k[d] == 0) & launch_rt_names
        link_prev = ~use_launch & ~new_lane & (wait_end < prev_end)
        launch_w = ev_ts[dev_ev] - launch_ts
        has_launch = use_launch
        typical = 0
    else:
        link_prev = ~new_lane
        delay = ev_ts[dev_ev] - launch_ts
        # the launch latency of the trace: ops launched onto an idle stream, collectives
        # left out (they also wait for their peers)
        plain = idle & (ev_cat[dev_ev] != K.COMMUNICATION)
        typical = int(np.median(delay[plain])) if plain.any() else 0
        launch_w = np.where(idle, delay, np.minimum(delay, typical))
        has_launch = np.ones(len(d), dtype=bool)
    kk_w = np.where(link_prev & (hta | ~idle), np.maximum(gap, 0), 0)
    kk_kind = np.where(hta | ~idle, K.KERNEL_KERNEL, K.ORDER)
    m = len(d)
    do = np.empty(2 * m, dtype=np.int64)
    do[0::2], do[1::2] = 2 * dev_ev, 2 * dev_ev + 1
    dfirst = np.zeros(2 * m, dtype=bool)
    dfirst[0::2] = ~link_prev
    dw = np.empty(2 * m, dtype=np.int64)
    dw[0::2], dw[1::2] = kk_w, ev_end[dev_ev] - ev_ts[dev_ev]
    dk = np.empty(2 * m, dtype=np.int8)
    dk[0::2], dk[1::2] = kk_kind, K.OPERATOR
    down = np.empty(2 * m, dtype=np.int64)
    down[0::2] = np.where(new_lane, -1, dev_ev - 1)  # HTA: a gap is the previous op's
    down[1::2] = dev_ev
    down[0::2][~link_prev] = -1

    # cross edges: launches
    xs = [2 * launch_ev[has_launch]]
    xd = [2 * dev_ev[has_launch]]
    xw = [np.maximum(launch_w[has_launch], 0)]
    xk = [np.full(int(has_launch.sum()), K.LAUNCH, np.int8)]
    xo = [dev_ev[has_launch]]
    xs.append(2 * w_src[has_wait] + 1)
    xd.append(2 * dev_ev[has_wait])
    xw.append(np.zeros(int(has_wait.sum()), np.int64))  # a wait costs nothing itself
    xk.append(np.full(int(has_wait.sum()), K.WAIT, np.int8))
    xo.append(dev_ev[has_wait])
    waited = np.full(n, -1, dtype=np.int64)
    if hta:
        s_src, s_dst = _hta_syncs(trace, r, len(h), dev_ev, lane_d, ev_ts, ev_end, ws)
        s_w = np.zeros(len(s_src), dtype=np.int64)
    else:
        s_src, s_dst = _waits(trace, r, len(h), dev_ev, rt_local, ev_ts, ev_end)
        s_w = ev_end[s_dst] - ev_end[s_src]
        waited[s_dst] = s_src
        # the waiting call's own time is what is left after the device op it waited for
        tail = np.zeros(n, dtype=bool)
        tail[s_dst] = True
        into_end = (ho % 2 == 1) & tail[ho // 2]
        hw = hw.copy()
        tail_w = np.zeros(n, dtype=np.int64)
        tail_w[s_dst] = s_w
        hw[into_end & ~hf] = np.minimum(hw[into_end & ~hf], tail_w[ho // 2][into_end & ~hf])
    xs.append(2 * s_src + 1)
    xd.append(2 * s_dst + 1)
    xw.append(s_w)
    xk.append(np.full(len(s_src), K.SYNC, np.int8))
    xo.append(s_dst)
    node_ts = np.empty(2 * n, dtype=np.int64)
    node_ts[0::2], node_ts[1::2] = ev_ts, ev_end
    return Graph(
        t0=ws, fam=fam, row=row, ts=node_ts, lane=ev_lane, ev_cat=ev_cat,
        order=np.concatenate((ho, do)), first=np.concatenate((hf, dfirst)),
        w=np.concatenate((hw, dw)), kind=np.concatenate((hk, dk)),
        owner=np.concatenate((hown, down)),
        xs=np.concatenate(xs).astype(np.int64), xd=np.concatenate(xd).astype(np.int64),
        xw=np.concatenate(xw).astype(np.int64), xkind=np.concatenate(xk).astype(np.int8),
        xowner=np.concatenate(xo).astype(np.int64), waited=waited, launch_ns=typical)


def _in_dataloader(trace: Trace, dl: I64, ts: I64, end: I64, tid: npt.NDArray[np.int32]) -> B:
    """Host events inside a DataLoader range on their thread (the range included)."""
    host = trace.host
    if len(dl) == 0 or len(ts) == 0:
        return np.zeros(len(ts), dtype=bool)
    k = np.searchsorted(host.ts[dl], ts, side="right") - 1
    kc = dl[np.maximum(k, 0)]
    inside: B = (k >= 0) & (host.ts[kc] + host.dur[kc] >= end) & (host.tid[kc] == tid)
    return inside


def _hta_syncs(trace: Trace, r: I64, base: int, dev_ev: I64, lane_d: I64, ev_ts: I64,
               ev_end: I64, ws: int) -> tuple[I64, I64]:
    """HTA's GPU->CPU sync edges from ``cuda_sync`` events: Stream Sync waits for the last
    op started on its stream, Context Sync for the last op of every stream (ops in the
    window, ordered by start; the sync by its end)."""
    sy = trace.syncs
    if len(sy) == 0 or len(dev_ev) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo, hi = np.searchsorted(sy.ts, [ws, ws + int(ev_end.max(initial=0)) + 1])
    sy = type(sy).from_columns({k: v[lo:hi] for k, v in sy.columns().items()})
    rt_corr = trace.runtime.correlation[r]
    o = np.argsort(rt_corr, kind="stable")
    pos = np.searchsorted(rt_corr[o], sy.correlation)
    pos_c = np.minimum(pos, len(o) - 1)
    found = (pos < len(o)) & (rt_corr[o][pos_c] == sy.correlation) & (sy.correlation >= 0)
    call = np.where(found, base + o[pos_c], -1)
    ctx = trace.string_ids(_is_context_sync)[sy.name]
    stream_sync = trace.string_ids(_is_stream_sync)[sy.name]
    src: list[I64] = []
    dst: list[I64] = []
    sync_end = sy.ts + sy.dur - ws
    lanes = np.unique(lane_d)
    for lane in lanes.tolist():  # one pass per stream
        sel = np.flatnonzero(lane_d == lane)
        stream = lane // 4096
        want = found & (ctx | (stream_sync & (sy.stream == stream)))
        if not want.any():
            continue
        k = np.searchsorted(ev_ts[dev_ev[sel]], sync_end[want], side="right") - 1
        ok = k >= 0
        src.append(dev_ev[sel][k[ok]])
        dst.append(call[want][ok])
    if not src:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(src), np.concatenate(dst)


def _is_context_sync(name: str) -> bool:
    return name == "Context Sync"


def _is_stream_sync(name: str) -> bool:
    return name == "Stream Sync"


def _waits(trace: Trace, r: I64, base: int, dev_ev: I64, rt_local: I64,
           ev_ts: I64, ev_end: I64) -> tuple[I64, I64]:
    """For the replay: which device op each waiting runtime call waited for. A call that
    can wait (kinds.may_wait) and launched a device op that ended before the call returned
    (a blocking copy) waited for that op; any other waiting call waited for the op that
    ended last, within the call, among the ops launched before it on any stream."""
    rt = trace.runtime
    calls = np.flatnonzero(trace.string_ids(K.may_wait)[rt.name[r]])
    if len(calls) == 0 or len(dev_ev) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    c_ev = base + calls
    c_ts, c_end = ev_ts[c_ev], ev_end[c_ev]
    # own op: a copy launched by the call itself
    own = np.full(len(r), -1, dtype=np.int64)
    own[rt_local] = dev_ev
    mine = own[calls]
    # ops by launch time; running "latest end" per prefix
    l_ts = ev_ts[base + rt_local]
    o = np.argsort(l_ts, kind="stable")
    ends = ev_end[dev_ev[o]]
    run = np.maximum.accumulate(ends)
    arg = np.maximum.accumulate(np.where(ends == run, np.arange(len(o)), 0))
    k = np.searchsorted(l_ts[o], c_ts, side="left") - 1
    best = np.where(k >= 0, dev_ev[o][arg[np.maximum(k, 0)]], -1)
    best = np.where(mine >= 0, mine, best)
    b_end = ev_end[np.maximum(best, 0)]
    ok = (best >= 0) & (b_end > c_ts) & (b_end <= c_end)
    return best[ok], c_ev[ok]


def _is_event_record(name: str) -> bool:
    return name in ("cudaEventRecord", "hipEventRecord", "cudaEventRecordWithFlags")


def _is_stream_wait(name: str) -> bool:
    return name in ("cudaStreamWaitEvent", "hipStreamWaitEvent")


def _stream_waits(trace: Trace, r: I64, base: int, dev_ev: I64, rt_local: I64, ev_ts: I64,
                  ev_lane: I64) -> I64:
    """Per device op, the op on another stream it waits for (cudaStreamWaitEvent), -1 if
    none. Kineto's ``wait_on_cuda_event_record_corr_id`` is not kept by the reader, so the
    pairing is HTA's rule on what the host did: the event was recorded by the last
    cudaEventRecord on the waiting thread before the wait, after the last launch on that
    thread (its stream is the recorded one); the op waited for is the last op launched
    on that stream before the record; the waiting op is the first op the thread launches
    on another stream after the wait."""
    rt = trace.runtime
    out = np.full(len(dev_ev), -1, dtype=np.int64)
    names_r = rt.name[r]
    rec = np.flatnonzero(trace.string_ids(_is_event_record)[names_r])
    wai = np.flatnonzero(trace.string_ids(_is_stream_wait)[names_r])
    if len(rec) == 0 or len(wai) == 0 or len(dev_ev) == 0:
        return out
    thread = ev_lane[base + np.arange(len(r))]
    launch_local = rt_local  # runtime event (local index) of each device op
    l_thread = thread[launch_local]
    l_ts = ev_ts[base + launch_local]
    l_stream = ev_lane[dev_ev]
    r_ts = ev_ts[base + np.arange(len(r))]
    for th in np.unique(thread[wai]).tolist():  # one pass per thread
        w_i = wai[thread[wai] == th]
        rec_t = rec[thread[rec] == th]
        mine = np.flatnonzero(l_thread == th)
        if len(rec_t) == 0 or len(mine) == 0:
            continue
        mine = mine[np.argsort(l_ts[mine], kind="stable")]
        k = np.searchsorted(r_ts[rec_t], r_ts[w_i], side="right") - 1
        ok = k >= 0
        rec_ts = np.where(ok, r_ts[rec_t[np.maximum(k, 0)]], -1)
        j = np.searchsorted(l_ts[mine], rec_ts, side="left") - 1
        ok &= j >= 0
        rec_stream = l_stream[mine[np.maximum(j, 0)]]
        nxt = np.searchsorted(l_ts[mine], r_ts[w_i], side="right")
        ok &= nxt < len(mine)
        dest = mine[np.minimum(nxt, len(mine) - 1)]
        ok &= l_stream[dest] != rec_stream
        for s_lane in np.unique(rec_stream[ok]).tolist():  # one pass per recorded stream
            on = np.flatnonzero(l_stream == s_lane)
            on = on[np.argsort(l_ts[on], kind="stable")]
            sel = ok & (rec_stream == s_lane)
            q = np.searchsorted(l_ts[on], rec_ts[sel], side="left") - 1
            good = q >= 0
            out[dest[sel][good]] = dev_ev[on[q[good]]]
    return out


OVERLAP_TOLERANCE = 0.05  # launching threads busy at the same time for less than this share


def _merge_threads(lane: I64, ts: I64, end: I64, n_host: int, r: I64, links: Links,
                   d: I64) -> I64:
    """For the replay: the threads that launch device work become one chain when they take
    turns (PyTorch runs backward on an autograd thread while the main thread waits, then
    the optimizer on the main thread again): the hand-over is then a dependency, not two
    independent threads. Threads that run at the same time stay apart."""
    launching = np.unique(lane[n_host + np.searchsorted(r, links.device_runtime[d])])
    if len(launching) < 2:
        return lane
    sel = np.isin(lane, launching)
    busy = 0
    starts: list[I64] = []
    ends: list[I64] = []
    for ln in launching.tolist():  # one pass per thread
        m = sel & (lane == ln)
        u = union(ts[m], end[m])
        busy += length(u)
        starts.append(u[0])
        ends.append(u[1])
    together = length(union(np.concatenate(starts), np.concatenate(ends)))
    if busy > (1 + OVERLAP_TOLERANCE) * together:
        return lane
    out: I64 = lane.copy()
    out[sel] = launching[0]
    return out
