"""The dependency graph: every edge kind on a small synthetic trace, with the critical
path's numbers (HTA's weights) and the replay's (docs/metrics.md "Critical path",
docs/whatif.md). Times in the builders are µs; the graph's are ns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.build import Graph, build
from stepscope.analysis.graph.critical import critical_path, shares
from stepscope.analysis.graph.solve import longest
from stepscope.analysis.graph.window import Window, find, parse
from stepscope.errors import UsageError
from stepscope.model import Trace

US = 1000


def _load(b: TraceBuilder, tmp_path: Path) -> Trace:
    return b.load(tmp_path)


def _path(trace: Trace, start: float = 0, end: float = 10_000, mode: str = "hta") -> Any:
    return critical_path(trace, Links(trace), Window("w", int(start * US), int(end * US)),
                         mode=mode)


def _us(by: dict[str, int]) -> dict[str, float]:
    return {k: v / US for k, v in by.items() if v}


def _sync(b: TraceBuilder, call: dict[str, Any], kind: str, stream: int, ts: float,
          dur: float) -> None:
    """A cuda_sync event (PyTorch >= 2.1) for the runtime call ``call``."""
    b._complete("cuda_sync", kind, 0, stream, ts, dur,
                {"device": 0, "stream": stream, "correlation": call["args"]["correlation"],
                 "cuda_sync_kind": kind})


def test_nesting_and_sequence_edges(tmp_path: Path) -> None:
    """A [0, 100] holds B [10, 30] and C [50, 60]; D [120, 140] follows. HTA: the gap
    between top-level ranges is a zero-weight dependency, everything else is timed."""
    b = TraceBuilder()
    a = b.op("aten::a", 0, 100)
    b.op("aten::b", 10, 20)
    b.op("aten::c", 50, 10)
    b.op("aten::d", 120, 20)
    del a
    t = _load(b, tmp_path)
    r = _path(t)
    assert r.length_ns == 120 * US  # 100 (A with its children) + 20 (D), the gap is free
    assert _us(r.by_category_ns) == {"cpu": 120.0}
    g = build(t, Links(t), 0, 10_000 * US, "hta")
    assert sorted(K.EDGE_KINDS[k] for k in set(g.kind[~g.first].tolist())) == [
        "dependency", "operator"]
    # attribution: A's own time is 10 + 20 + 40 (before B, between B and C, after C)
    top = {e.name: e.on_path_ns / US for e in r.events}
    assert top == {"aten::a": 70.0, "aten::b": 20.0, "aten::c": 10.0, "aten::d": 20.0}
    # the replay keeps the 20 µs gap: the recorded 140 µs
    rr = _path(t, mode="replay")
    assert rr.length_ns == 140 * US


def test_launch_edge_when_the_stream_is_idle(tmp_path: Path) -> None:
    b = TraceBuilder()
    o = b.op("aten::mm", 0, 50)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel="sgemm", k_ts=30, k_dur=100)
    t = _load(b, tmp_path)
    r = _path(t)
    # host 0 -> 10 (cpu), launch 10 -> 30 (launch overhead), kernel 30 -> 130
    assert r.length_ns == 130 * US
    assert _us(r.by_category_ns) == {"cpu": 10.0, "launch_overhead": 20.0, "gpu_compute": 100.0}
    g = build(t, Links(t), 0, 10_000 * US, "hta")
    assert g.xkind.tolist() == [K.LAUNCH]
    assert g.xw.tolist() == [20 * US]


def test_kernel_kernel_edge_when_the_launch_was_queued(tmp_path: Path) -> None:
    """The second kernel was launched (at 40) while the first ran (30-130): no launch edge
    (HTA), a kernel-kernel edge of the 5 µs gap. (Launched before the first started, the
    first would have had no edge at all: HTA's queue was not empty at its start.)"""
    b = TraceBuilder()
    o = b.op("aten::mm", 0, 50)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel="k1", k_ts=30, k_dur=100)
    b.launch(o, "cudaLaunchKernel", 40, 5, kernel="k2", k_ts=135, k_dur=40)
    t = _load(b, tmp_path)
    r = _path(t)
    assert r.length_ns == 175 * US
    assert _us(r.by_category_ns) == {"cpu": 10.0, "launch_overhead": 20.0,
                                     "gpu_compute": 140.0, "kernel_to_kernel": 5.0}
    g = build(t, Links(t), 0, 10_000 * US, "hta")
    assert (g.xkind == K.LAUNCH).sum() == 1  # only the first kernel's
    assert K.KERNEL_KERNEL in g.kind.tolist()


def _synced(b: TraceBuilder) -> dict[str, Any]:
    """Host: launch a 170 µs kernel, then cudaStreamSynchronize until it ends, then a
    20 µs operator."""
    o = b.op("aten::step", 0, 230)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel="k", k_ts=30, k_dur=170)
    call = b.runtime("cudaStreamSynchronize", 20, 185, owner=o)
    _sync(b, call, "Stream Sync", 7, 190, 15)
    b.op("aten::after", 206, 20)
    return call


def test_sync_edge_from_the_kernel_to_the_waiting_call(tmp_path: Path) -> None:
    b = TraceBuilder()
    _synced(b)
    t = _load(b, tmp_path)
    g = build(t, Links(t), 0, 10_000 * US, "hta")
    syncs = np.flatnonzero(g.xkind == K.SYNC)
    assert len(syncs) == 1
    src, dst = int(g.xs[syncs[0]]) // 2, int(g.xd[syncs[0]]) // 2
    assert g.fam[src] == K.DEVICE and g.fam[dst] == K.RUNTIME
    r = _path(t)
    # 10 host + 20 launch + 170 kernel, then the sync (0) and the host to the end: 206 -> 230
    # (the call's end at 205 -> aten::after 206..226 -> aten::step's end 230)
    assert r.length_ns == (10 + 20 + 170 + 25) * US
    pct = shares(r.by_category_ns)
    assert pct["gpu_compute"] == pytest.approx(100 * 170 / 225)
    assert sum(pct.values()) == pytest.approx(100.0)


def test_replay_infers_the_wait_without_cuda_sync_events(tmp_path: Path) -> None:
    """Traces before PyTorch 2.1 have no cuda_sync events: the replay ties a blocking call
    to the op that ended last inside it."""
    b = TraceBuilder()
    o = b.op("aten::step", 0, 230)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel="k", k_ts=30, k_dur=170)
    b.runtime("cudaStreamSynchronize", 20, 185, owner=o)
    t = _load(b, tmp_path)
    g = build(t, Links(t), 0, 10_000 * US, "replay")
    (x,) = np.flatnonzero(g.xkind == K.SYNC)
    assert g.xw[x] == 5 * US  # the call returns 5 µs after the kernel ends
    call = int(g.xd[x]) // 2
    assert g.waited[call] == int(g.xs[x]) // 2


def test_stream_wait_edge_across_streams(tmp_path: Path) -> None:
    """k1 on stream 7, cudaEventRecord, cudaStreamWaitEvent, k2 on stream 20: k2 waits for
    k1 (HTA's pairing, from the host calls)."""
    b = TraceBuilder()
    o = b.op("aten::x", 0, 100)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel="k1", k_ts=20, k_dur=100)
    b.runtime("cudaEventRecord", 16, 2, owner=o)
    w = b.runtime("cudaStreamWaitEvent", 19, 2, owner=o)
    _sync(b, w, "Stream Wait Event", 20, 21, 1)
    b.launch(o, "cudaLaunchKernel", 22, 5, kernel="k2", k_ts=125, k_dur=30, stream=20)
    t = _load(b, tmp_path)
    g = build(t, Links(t), 0, 10_000 * US, "hta")
    (x,) = np.flatnonzero(g.xkind == K.WAIT)
    names = [t.name(int(t.device.name[g.row[int(v) // 2]])) for v in (g.xs[x], g.xd[x])]
    assert names == ["k1", "k2"]
    r = _path(t)
    # 10 host + 10 launch + 100 k1 + wait (0) + 30 k2: k2's own launch edge is not used
    # (HTA: a launch edge needs the awaited op finished before the launch)
    assert r.length_ns == 150 * US


def test_graph_launch_links_every_kernel_of_the_graph(tmp_path: Path) -> None:
    b = TraceBuilder()
    o = b.op("aten::graph_replay", 0, 50)
    rt, _ = b.launch(o, "cudaGraphLaunch", 10, 8, kernel="g1", k_ts=30, k_dur=20)
    b.device_op(rt, "g2", 51, 20)
    t = _load(b, tmp_path)
    g = build(t, Links(t), 0, 10_000 * US, "replay")
    launches = np.flatnonzero(g.xkind == K.LAUNCH)
    assert len(launches) == 2
    assert len({int(s) for s in g.xs[launches]}) == 1  # both from the one graph launch


def test_dataloader_time_is_data_loading(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 500)
    o = b.op("aten::mm", 510, 50)
    b.launch(o, "cudaLaunchKernel", 520, 5, kernel="k", k_ts=530, k_dur=100)
    t = _load(b, tmp_path)
    r = _path(t, mode="replay")
    assert r.length_ns == 630 * US
    assert _us(r.by_category_ns) == {"data_loading": 500.0, "cpu": 20.0,
                                     "launch_overhead": 10.0, "gpu_compute": 100.0}


def test_solver_matches_a_direct_longest_path() -> None:
    """Two chains and cross edges against a topological-order evaluation."""
    # chain A: nodes 0-1-2-3, chain B: nodes 4-5-6; cross 1->5 (w 7), 5->3 (w 0)
    order = np.array([0, 1, 2, 3, 4, 5, 6])
    first = np.array([True, False, False, False, True, False, False])
    w = np.array([0, 2, 3, 4, 0, 1, 6])
    xs, xd, xw = np.array([1, 5]), np.array([5, 3]), np.array([7, 0])
    anchor = np.zeros(7, dtype=np.int64)
    sol = longest(order, first, w, xs, xd, xw, anchor)
    # t0 0, t1 2, t2 5, t4 0, t5 max(1, 2 + 7) = 9, t6 15, t3 max(5 + 4, 9) = 9
    assert sol.t.tolist() == [0, 2, 5, 9, 0, 9, 15]
    assert sol.rounds >= 2


def test_window_names_count_instances_from_zero(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("## forward ##", 0, 10)
    b.annotation("## forward ##", 20, 10)
    b.op("aten::x", 1, 2)
    t = _load(b, tmp_path)
    assert find(t, "forward#1").start == 20 * US
    assert find(t, "## forward ##").start == 0
    assert parse("ProfilerStep#3") == ("ProfilerStep", 3)
    with pytest.raises(UsageError, match="instance 2 does not exist"):
        find(t, "forward#2")


def test_graph_of_an_empty_window(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::x", 0, 10)
    t = _load(b, tmp_path)
    r = _path(t, 100, 200)
    assert r.length_ns == 0 and r.events == ()


def _is_graph(g: Graph) -> bool:
    return len(g.order) == 2 * g.events


def test_every_node_is_on_one_chain(tmp_path: Path) -> None:
    b = TraceBuilder()
    _synced(b)
    t = _load(b, tmp_path)
    for mode in ("hta", "replay"):
        g = build(t, Links(t), 0, 10_000 * US, mode)
        assert _is_graph(g)
        assert sorted(g.order.tolist()) == list(range(2 * g.events))



@pytest.mark.parametrize("min_slice", [1, 40, 2048])
def test_sliced_solver_equals_the_plain_one(min_slice: int,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Random chains with forward cross edges: slicing at arbitrary cuts gives the same
    times and the same path (ties included: half the graphs have weights of 0-2), whether
    small slices are joined (``MIN_SLICE``) or not."""
    from stepscope.analysis.graph import solve
    from stepscope.analysis.graph.solve import backtrack, longest_sliced, verified

    monkeypatch.setattr(solve, "MIN_SLICE", min_slice)
    rng = np.random.default_rng(7)
    for it in range(40):
        top = 3 if it % 2 else 20  # tie-heavy weights every other graph
        lens = rng.integers(1, 30, size=4)
        m = int(lens.sum())
        order = np.arange(m)
        first = np.zeros(m, dtype=bool)
        first[np.concatenate(([0], np.cumsum(lens)[:-1]))] = True
        time = np.concatenate([np.sort(rng.integers(0, 1000, size=n)) for n in lens])
        w = rng.integers(0, top, size=m)
        src = rng.integers(0, m, size=15)
        dst = rng.integers(0, m, size=15)
        fwd = time[src] < time[dst]
        xs, xd = src[fwd], dst[fwd]
        xw = rng.integers(0, top + 10 if top > 3 else top, size=len(xs))
        anchor = np.where(first, time, -(1 << 41))
        plain = longest(order, first, w, xs, xd, xw, anchor)
        sliced = longest_sliced(order, first, w, xs, xd, xw, anchor, time,
                                np.sort(rng.integers(0, 1000, size=5)))
        assert np.array_equal(plain.t, sliced.t)
        # the same path: the same entries and, of equally late cross edges, the same one
        assert np.array_equal(plain.entry, sliced.entry)
        assert np.array_equal(plain.via, sliced.via)
        end = int(np.argmax(sliced.t))
        pos, cross = backtrack(sliced, order, xs, end)
        start = int(order[pos.min() - 1]) if len(pos) else end
        if len(cross):
            start = min(start, int(xs[cross].min()))
        assert w[pos].sum() + xw[cross].sum() <= sliced.t[end]
        # the solution checks out in one round; anything else is refused
        again = verified(order, first, w, xs, xd, xw, anchor, plain.t)
        assert again is not None and np.array_equal(again.t, plain.t)
        assert np.array_equal(again.entry, plain.entry)
        wrong = plain.t.copy()
        wrong[int(np.argmax(wrong))] += 1
        assert verified(order, first, w, xs, xd, xw, anchor, wrong) is None
