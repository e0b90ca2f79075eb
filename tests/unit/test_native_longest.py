"""The native longest-path pass (longest.c) gives solve.longest's times, entries and
edges on every graph it accepts, and declines what it cannot be sure of."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis.graph import native, solve
from stepscope.analysis.graph.solve import NEG, longest, longest_sliced, verified

pytestmark = pytest.mark.skipif(not native.available(), reason="native solver not built")


@st.composite
def graphs(draw: st.DrawFn) -> tuple[np.ndarray, ...]:
    """Chains over a shuffled node numbering, with cross edges forward in a random
    topological order of positions (or, when asked, any edges: cycles included)."""
    lens = draw(st.lists(st.integers(1, 12), min_size=1, max_size=5))
    m = sum(lens)
    extra = draw(st.integers(0, 3))  # nodes on no chain
    n = m + extra
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    order = rng.permutation(n)[:m].astype(np.int64)
    first = np.zeros(m, dtype=bool)
    first[np.concatenate(([0], np.cumsum(lens)[:-1]))] = True
    top = draw(st.sampled_from([2, 3, 50]))  # small weights: many ties
    w = rng.integers(0, top, size=m).astype(np.int64)
    k = draw(st.integers(0, 3 * m))
    # positions in time: each chain's positions in order; edges only forward in time
    time = np.concatenate([np.sort(rng.integers(0, 100, size=x)) for x in lens])
    src = rng.integers(0, m, size=k)
    dst = rng.integers(0, m, size=k)
    fwd = time[src] < time[dst] if draw(st.booleans()) else np.ones(k, dtype=bool)
    xs, xd = order[src[fwd]], order[dst[fwd]]
    if extra and draw(st.booleans()):  # edges from and to nodes on no chain
        off = np.setdiff1d(np.arange(n), order)
        xs = np.append(xs, off[0])
        xd = np.append(xd, order[0])
    xw = rng.integers(-1 if top < 50 else 0, top, size=len(xs)).astype(np.int64)
    anchor = np.where(rng.random(n) < 0.5, rng.integers(0, 100, size=n), NEG).astype(np.int64)
    return order, first, w, xs.astype(np.int64), xd.astype(np.int64), xw, anchor


@settings(max_examples=400, deadline=None)
@given(graphs())
def test_native_equals_numpy(g: tuple[np.ndarray, ...]) -> None:
    order, first, w, xs, xd, xw, anchor = g
    got = native.longest_native(order, first, w, xs, xd, xw, anchor)
    plain = longest(order, first, w, xs, xd, xw, anchor, max_rounds=200)
    if got is None:  # declined: only for a cycle (one of zero weight numpy solves too)
        assert _cyclic(order, first, xs, xd)
        return
    assert _settled(plain, xs, xd, xw)
    t, entry = got
    assert np.array_equal(t, plain.t)
    assert np.array_equal(entry, plain.entry)


def _cyclic(order: np.ndarray, first: np.ndarray, xs: np.ndarray, xd: np.ndarray) -> bool:
    """Kahn's algorithm over the positions: chain links and cross edges between nodes on a
    chain."""
    pos = {int(v): k for k, v in enumerate(order)}
    edges = [(k - 1, k) for k in range(1, len(order)) if not first[k]]
    edges += [(pos[int(s)], pos[int(d)]) for s, d in zip(xs, xd, strict=True)
              if int(s) in pos and int(d) in pos]
    indeg = [0] * len(order)
    for _, d in edges:
        indeg[d] += 1
    ready = [k for k, x in enumerate(indeg) if x == 0]
    seen = 0
    while ready:
        k = ready.pop()
        seen += 1
        for s, d in edges:
            if s == k:
                indeg[d] -= 1
                if indeg[d] == 0:
                    ready.append(d)
    return seen < len(order)


def _settled(sol: solve.Solution, xs: np.ndarray, xd: np.ndarray, xw: np.ndarray) -> bool:
    src = sol.t[xs]
    return not ((src > NEG) & (src + xw > sol.t[xd])).any()


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_sliced_with_and_without_native(g: tuple[np.ndarray, ...]) -> None:
    """What the report uses: longest_sliced, natively or by numpy slices, the same."""
    order, first, w, xs, xd, xw, anchor = g
    pos = np.empty(len(anchor), dtype=np.int64)
    pos[order] = np.arange(len(order))
    node_time = np.zeros(len(anchor), dtype=np.int64)
    node_time[order] = pos[order]  # positions as times: every edge forward or declined
    if not (node_time[xs] < node_time[xd]).all() or native.longest_native(
            order, first, w, xs, xd, xw, anchor) is None:
        return
    fast = longest_sliced(order, first, w, xs, xd, xw, anchor, node_time, node_time[::3])
    saved = native._LIB
    native._LIB = None
    try:
        slow = longest_sliced(order, first, w, xs, xd, xw, anchor, node_time, node_time[::3])
    finally:
        native._LIB = saved
    assert np.array_equal(fast.t[order], slow.t[order])
    assert np.array_equal(fast.entry, slow.entry)
    assert np.array_equal(fast.via, slow.via)


@settings(max_examples=100, deadline=None)
@given(graphs())
def test_verified_with_and_without_native(g: tuple[np.ndarray, ...]) -> None:
    """The recorded replay's check: the right guess is the solution, a wrong one is not."""
    order, first, w, xs, xd, xw, anchor = g
    if native.longest_native(order, first, w, xs, xd, xw, anchor) is None:
        return
    right = longest(order, first, w, xs, xd, xw, anchor).t
    wrong = right.copy()
    wrong[order[-1]] += 1
    saved = native._LIB
    try:
        for lib in (saved, None):
            native._LIB = lib
            sol = verified(order, first, w, xs, xd, xw, anchor, right)
            assert sol is not None and np.array_equal(sol.t, right)
            plain = longest(order, first, w, xs, xd, xw, anchor)
            assert np.array_equal(sol.entry, plain.entry)
            assert np.array_equal(sol.via, plain.via)
            assert verified(order, first, w, xs, xd, xw, anchor, wrong) is None
    finally:
        native._LIB = saved


def _chain(m: int) -> tuple[np.ndarray, ...]:
    order = np.arange(m, dtype=np.int64)
    first = np.zeros(m, dtype=bool)
    first[0] = True
    return order, first


def test_declines_what_it_cannot_be_sure_of() -> None:
    order, first = _chain(3)
    w = np.array([0, 1, 1], dtype=np.int64)
    none = np.empty(0, dtype=np.int64)
    anchor = np.array([0, NEG, NEG], dtype=np.int64)
    assert native.longest_native(order, first, w, none, none, none, anchor) is not None
    cycle = (np.array([2], dtype=np.int64), np.array([1], dtype=np.int64),
             np.array([0], dtype=np.int64))
    assert native.longest_native(order, first, w, *cycle, anchor) is None
    assert native.longest_native(order, first, np.array([0, -1, 1]), none, none, none,
                                 anchor) is None  # a negative weight
    assert native.longest_native(order, first, np.array([0, 1 << 41, 1]), none, none, none,
                                 anchor) is None  # beyond the exact range
    twice = np.array([0, 1, 1], dtype=np.int64)
    assert native.longest_native(twice, first, w, none, none, none, anchor) is None
    outside = np.array([0, 1, 7], dtype=np.int64)
    assert native.longest_native(outside, first, w, none, none, none, anchor) is None


def test_off_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STEPSCOPE_NO_NATIVE", "1")
    assert native._load() is None


def test_a_stale_build_is_not_loaded() -> None:
    """A library of another source (another interface version, or no version function at
    all) is never called: its numpy path is taken."""
    from stepscope import nativelib
    from stepscope.formats.kineto import scan

    assert nativelib.load(native.LIBRARY, "gl_abi", native.ABI) is not None
    assert nativelib.load(native.LIBRARY, "gl_abi", native.ABI + 1) is None
    if scan.LIBRARY.is_file():
        assert nativelib.load(scan.LIBRARY, "gl_abi", native.ABI) is None  # no such function
