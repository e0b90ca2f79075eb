"""Interval algebra on int64 ns [start, end) ranges: exact results, edge cases."""

from __future__ import annotations

import numpy as np
import pytest

from stepscope.analysis.events import intervals as iv


def U(*pairs: tuple[int, int]) -> iv.Union:
    return iv.union(np.array([p[0] for p in pairs], np.int64),
                    np.array([p[1] for p in pairs], np.int64))


def pairs(u: iv.Union) -> list[tuple[int, int]]:
    return [(int(s), int(e)) for s, e in zip(u[0], u[1], strict=True)]


def test_union_merges_overlapping_touching_nested_and_sorts() -> None:
    u = U((10, 20), (0, 5), (5, 8), (12, 15), (18, 25), (30, 31))
    assert pairs(u) == [(0, 8), (10, 25), (30, 31)]
    assert iv.length(u) == 8 + 15 + 1


def test_union_drops_zero_length_and_empty() -> None:
    assert pairs(U((3, 3), (7, 7))) == []
    assert pairs(U((3, 3), (1, 2))) == [(1, 2)]
    assert pairs(iv.union(np.empty(0, np.int64), np.empty(0, np.int64))) == []
    assert iv.length(iv.EMPTY) == 0
    # a zero-length range inside a gap does not bridge it
    assert pairs(U((0, 2), (2, 2), (4, 6))) == [(0, 2), (4, 6)]


def test_intersect() -> None:
    a = U((0, 10), (20, 30))
    b = U((5, 25))
    assert pairs(iv.intersect(a, b)) == [(5, 10), (20, 25)]
    assert pairs(iv.intersect(a, iv.EMPTY)) == []
    assert pairs(iv.intersect(iv.EMPTY, b)) == []
    # touching ranges share no time
    assert pairs(iv.intersect(U((0, 10)), U((10, 20)))) == []
    # nested
    assert pairs(iv.intersect(U((0, 100)), U((10, 20), (30, 40)))) == [(10, 20), (30, 40)]
    # identical
    assert pairs(iv.intersect(a, a)) == pairs(a)


def test_subtract() -> None:
    a = U((0, 10), (20, 30))
    assert pairs(iv.subtract(a, U((5, 25)))) == [(0, 5), (25, 30)]
    assert pairs(iv.subtract(a, iv.EMPTY)) == pairs(a)
    assert pairs(iv.subtract(iv.EMPTY, a)) == []
    assert pairs(iv.subtract(a, a)) == []
    assert pairs(iv.subtract(U((0, 10)), U((10, 20)))) == [(0, 10)]  # touching
    assert pairs(iv.subtract(U((0, 100)), U((10, 20), (30, 40)))) == [(0, 10), (20, 30), (40, 100)]
    assert pairs(iv.subtract(U((10, 20)), U((0, 100)))) == []  # fully covered


def test_merge_and_clip() -> None:
    assert pairs(iv.merge(U((0, 5)), U((5, 9), (20, 21)))) == [(0, 9), (20, 21)]
    assert pairs(iv.clip(U((0, 10), (20, 30), (40, 50)), 5, 25)) == [(5, 10), (20, 25)]
    assert pairs(iv.clip(U((0, 10)), 10, 20)) == []


def test_measure_in_windows() -> None:
    u = U((0, 10), (20, 30))
    lo = np.array([0, 5, 10, 15, 25, 30, -10, 0], np.int64)
    hi = np.array([30, 25, 20, 15, 100, 40, 0, 0], np.int64)
    assert iv.measure_in(u, lo, hi).tolist() == [20, 10, 0, 0, 5, 0, 0, 0]
    assert iv.measure_in(iv.EMPTY, lo, hi).tolist() == [0] * 8


def test_cumulative() -> None:
    u = U((0, 10), (20, 30))
    t = np.array([-5, 0, 5, 10, 15, 20, 25, 30, 99], np.int64)
    assert iv.cumulative(u, t).tolist() == [0, 0, 5, 10, 10, 10, 15, 20, 20]


def test_within_ranges_per_thread_and_nested() -> None:
    a = np.array
    # thread 1: [0, 100) holding [10, 20); thread 2: [50, 60)
    start, end, tid = a([0, 10, 50]), a([100, 20, 60]), a([1, 1, 2])
    inside = iv.within_ranges(start, end, tid,
                              a([30, 55, 55, 5, 90, 100, 0]), a([40, 58, 58, 101, 100, 110, 5]),
                              a([1, 1, 2, 1, 1, 1, 3]))
    # after the nested range, still in the outer one; thread 2's range holds only its own;
    # ending past the range; ending at its end; starting at its end; a thread without ranges
    assert inside.tolist() == [True, True, True, False, True, False, False]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_bitmap(seed: int) -> None:
    """Random unions checked against a per-ns boolean bitmap."""
    rng = np.random.default_rng(seed)
    def rand() -> tuple[iv.Union, np.ndarray]:
        s = rng.integers(0, 200, 30).astype(np.int64)
        e = s + rng.integers(0, 15, 30)
        bm = np.zeros(220, bool)
        for a, b in zip(s, e, strict=True):
            bm[a:b] = True
        return iv.union(s, e), bm
    (a, ba), (b, bb) = rand(), rand()
    assert iv.length(a) == ba.sum()
    assert iv.length(iv.intersect(a, b)) == (ba & bb).sum()
    assert iv.length(iv.subtract(a, b)) == (ba & ~bb).sum()
    assert iv.length(iv.merge(a, b)) == (ba | bb).sum()
    assert iv.measure_in(a, np.array([50]), np.array([150])).tolist() == [ba[50:150].sum()]
