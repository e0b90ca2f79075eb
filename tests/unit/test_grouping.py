"""stepscope.grouping gives exactly what np.unique gives, on either of its paths."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from stepscope.grouping import SMALL_RANGE, unique_inverse, unique_pairs

INT_TYPES = st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                             np.uint32, np.uint64])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(INT_TYPES.flatmap(lambda dt: hnp.arrays(dt, st.integers(0, 200))))
def test_unique_inverse_is_np_unique(keys: np.ndarray) -> None:
    uniq, inverse = unique_inverse(keys)
    want_u, want_i = np.unique(keys, return_inverse=True)
    assert uniq.dtype == want_u.dtype
    assert np.array_equal(uniq, want_u)
    assert inverse.dtype == np.int64
    assert np.array_equal(inverse, want_i)


def test_both_paths_are_taken_and_agree() -> None:
    rng = np.random.default_rng(7)
    dense = rng.integers(-5, 1000, 50_000)  # range << count: the table
    sparse = rng.integers(-(1 << 62), 1 << 62, 1000)  # range >> count: np.unique
    narrow = rng.integers(-100, 100, 5000).astype(np.int8)  # offsets would wrap in int8
    top = np.array([2**64 - 1, 2**64 - 3, 2**64 - 1], dtype=np.uint64)  # beyond int64
    for keys in (dense, sparse, narrow, top, np.arange(SMALL_RANGE)):
        uniq, inverse = unique_inverse(keys)
        want_u, want_i = np.unique(keys, return_inverse=True)
        assert np.array_equal(uniq, want_u) and np.array_equal(inverse, want_i)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(0, 300).flatmap(lambda n: st.tuples(
    hnp.arrays(np.int32, n, elements=st.integers(-3, 40)),
    hnp.arrays(np.int64, n, elements=st.integers(-1, 1 << 40)))))
def test_unique_pairs_orders_as_a_packed_key(pair: tuple[np.ndarray, np.ndarray]) -> None:
    major, minor = pair
    width = (1 << 41) + 2  # wider than every minor value (offset by 1 to keep -1)
    want_u, want_i = np.unique(major.astype(np.int64) * width + (minor + 1),
                               return_inverse=True)
    major_u, minor_u, inverse = unique_pairs(major, minor)
    assert np.array_equal(major_u, want_u // width)
    assert np.array_equal(minor_u, want_u % width - 1)
    assert np.array_equal(inverse, want_i)
