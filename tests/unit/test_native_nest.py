"""The native nesting pass (events/nest.c) gives intervals.nest_sorted's numpy depths and
parents on every thread of ranges it accepts (nested, overlapping, zero-length, tied), and
declines what the definition's shortcut does not cover."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope import nativelib
from stepscope.analysis.events import intervals, native

pytestmark = pytest.mark.skipif(not native.available(), reason="native nesting not built")


def numpy_nest(start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    saved, native._LIB = native._LIB, None
    try:
        return intervals.nest_sorted(start, end)
    finally:
        native._LIB = saved


@st.composite
def threads(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    """One thread's ranges sorted by start asc, end desc: properly nested stacks, partial
    overlaps and zero-length ranges, on a coarse clock (many ties)."""
    n = draw(st.integers(0, 60))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    span = draw(st.sampled_from([3, 10, 1000]))
    start = rng.integers(0, span, size=n)
    dur = rng.integers(0, span, size=n) * (rng.random(n) < 0.8)  # a fifth zero-length
    if draw(st.booleans()):  # a nested call tree: each range inside the one opened before
        for i in range(1, n):
            if rng.random() < 0.7 and start[i - 1] + dur[i - 1] > start[i - 1]:
                start[i] = rng.integers(start[i - 1], start[i - 1] + dur[i - 1])
                dur[i] = rng.integers(0, start[i - 1] + dur[i - 1] - start[i] + 1)
    end = start + dur
    order = np.lexsort((-end, start))
    return start[order].astype(np.int64), end[order].astype(np.int64)


@settings(max_examples=500, deadline=None, derandomize=True, database=None)
@given(threads())
def test_native_equals_numpy(case: tuple[np.ndarray, np.ndarray]) -> None:
    start, end = case
    got = native.nest_native(start, end)
    assert got is not None
    depth, up = got
    want_depth, want_up = numpy_nest(start, end)
    assert depth.dtype == want_depth.dtype and up.dtype == want_up.dtype
    assert np.array_equal(depth, want_depth)
    assert np.array_equal(up, want_up)


def _cases() -> Iterator[tuple[list[int], list[int]]]:
    yield [0, 5, 3], [10, 6, 4]  # starts out of order
    yield [0, 1], [10, 0]  # a range ending before it starts


@pytest.mark.parametrize(("start", "end"), list(_cases()))
def test_it_declines_what_the_definition_does_not_reduce_to(start: list[int],
                                                           end: list[int]) -> None:
    assert native.nest_native(np.array(start), np.array(end)) is None
    depth, up = intervals.nest_sorted(np.array(start), np.array(end))  # numpy answers
    assert len(depth) == len(up) == len(start)


def test_a_deep_stack_and_strided_input() -> None:
    n = 5000  # each range inside the previous one: depth n - 1, every parent the one before
    start = np.arange(n, dtype=np.int64)
    end = 2 * n - start
    depth, up = intervals.nest_sorted(start[::1], end)
    assert depth.tolist() == list(range(n)) and up.tolist() == [-1, *range(n - 1)]
    wide = np.stack((start, end), axis=1)  # columns of a 2-D array: not contiguous
    d2, u2 = intervals.nest_sorted(wide[:, 0], wide[:, 1])
    assert np.array_equal(d2, depth) and np.array_equal(u2, up)


def test_a_stale_build_is_never_called() -> None:
    assert nativelib.load(native.LIBRARY, "nest_abi", native.ABI) is not None
    assert nativelib.load(native.LIBRARY, "nest_abi", native.ABI + 1) is None
