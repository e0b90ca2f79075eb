"""The native chains pass (longest.c's gl_chains) gives build._host_chains' numpy order,
weights, kinds and owners on every set of host threads it accepts (nested, overlapping and
zero-length ranges, ties on a coarse clock, blocking calls, both weightings), and declines
what its shortcut does not cover."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis.graph import build, native
from stepscope.analysis.graph import kinds as K

pytestmark = pytest.mark.skipif(not native.available(), reason="native passes not built")

Case = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, bool]


def numpy_chains(case: Case) -> tuple[np.ndarray, ...]:
    ts, end, lane, blocking, hta = case
    saved, native._LIB = native._LIB, None
    try:
        return build._host_chains(None, len(ts), ts, end, lane, blocking, hta)  # type: ignore[arg-type]
    finally:
        native._LIB = saved


@st.composite
def threads(draw: st.DrawFn) -> Case:
    """Host events of a few threads in no order: call trees, partial overlaps, zero-length
    ranges, on a coarse clock (many ties)."""
    n = draw(st.integers(0, 50))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([3, 10, 1000]))
    ts = rng.integers(0, span, size=n)
    dur = rng.integers(0, span, size=n) * (rng.random(n) < 0.75)
    if n and draw(st.booleans()):  # call trees: each range inside the one before it
        for i in range(1, n):
            if rng.random() < 0.7 and dur[i - 1] > 0:
                ts[i] = rng.integers(ts[i - 1], ts[i - 1] + dur[i - 1])
                dur[i] = rng.integers(0, ts[i - 1] + dur[i - 1] - ts[i] + 1)
    lane = rng.integers(0, draw(st.integers(1, 3)), size=n) * 4096 + 7
    blocking = rng.random(n + draw(st.integers(0, 3))) < 0.3  # longer: device events too
    return (ts.astype(np.int64), (ts + dur).astype(np.int64), lane.astype(np.int64),
            blocking, draw(st.booleans()))


@settings(max_examples=600, deadline=None, derandomize=True, database=None)
@given(threads())
def test_native_equals_numpy(case: Case) -> None:
    ts, end, lane, blocking, hta = case
    taken: list[bool] = []

    def spy(*args: object) -> object:
        out = real(*args)  # type: ignore[arg-type]
        taken.append(out is not None)
        return out

    real, build.chains_native = build.chains_native, spy  # type: ignore[assignment]
    try:
        got = build._host_chains(None, len(ts), ts, end, lane, blocking, hta)  # type: ignore[arg-type]
    finally:
        build.chains_native = real
    assert taken == ([True] if len(ts) else [])  # the native pass took every case
    want = numpy_chains(case)
    for have, expected, name in zip(got, want, ("order", "first", "w", "kind", "owner"),
                                    strict=True):
        assert have.dtype == expected.dtype, name
        assert np.array_equal(have, expected), name


def test_it_is_used_and_declines_what_it_cannot_order() -> None:
    ts = np.array([0, 2, 4], dtype=np.int64)
    end = np.array([10, 3, 6], dtype=np.int64)
    ev = np.array([0, 1, 2], dtype=np.int64)
    depth = np.array([0, 1, 1], dtype=np.int64)
    parent = np.array([-1, 0, 0], dtype=np.int64)
    lane = np.zeros(3, dtype=np.int64)
    blocking = np.zeros(3, dtype=bool)
    args = (ts, end, lane, blocking, False, K.DEPENDENCY, K.OPERATOR)
    got = native.chains_native(ev, depth, parent, *args)
    assert got is not None and got[0].tolist() == [0, 2, 3, 4, 5, 1]
    assert native.chains_native(ev[[1, 0, 2]], depth, parent, *args) is None  # not sorted
    assert native.chains_native(np.array([0, 0, 2]), depth, parent, *args) is None  # twice
    assert native.chains_native(ev, depth, parent, ts, np.array([10, 1, 6]), *args[2:]) is None
    same = (ts[[0, 1, 1]], np.array([10, 6, 3]), *args[2:])  # two starts at one time
    assert native.chains_native(ev, np.array([0, 1, 2]), parent, *same) is not None
    assert native.chains_native(ev, np.array([0, 2, 1]), parent, *same) is None  # falls
