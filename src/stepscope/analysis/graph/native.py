"""The native longest-path pass (longest.c, built into ``_longest.so``), through ctypes.

``longest_native(...)`` returns :func:`stepscope.analysis.graph.solve.longest`'s times and
entries, or None when the library is not built or declines the graph (a cycle, or values
outside the range in which solve.py's arithmetic is exact); the caller then solves with
numpy. ``STEPSCOPE_NO_NATIVE=1`` turns it off (the tests compare both).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import numpy.typing as npt

from stepscope import nativelib

LIBRARY = Path(__file__).with_name("_longest.so")

I64 = npt.NDArray[np.int64]
B = npt.NDArray[np.bool_]
_P = ctypes.c_void_p
ABI = 4  # longest.c's gl_abi(): raise both together when a function's signature changes


def _load() -> ctypes.CDLL | None:
    lib = nativelib.load(LIBRARY, "gl_abi", ABI)
    if lib is None:
        return None
    lib.gl_longest.argtypes = [ctypes.c_int64, ctypes.c_int64, _P, _P, _P, ctypes.c_int64,
                               _P, _P, _P, _P, _P, _P, _P]
    lib.gl_longest.restype = ctypes.c_int64
    lib.gl_work.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    lib.gl_work.restype = ctypes.c_int64
    lib.gl_chains.argtypes = [ctypes.c_int64, _P, _P, _P, _P, ctypes.c_int, _P, _P, _P,
                              ctypes.c_int8, ctypes.c_int8, _P, _P, _P, _P, _P, _P]
    lib.gl_chains.restype = ctypes.c_int64
    return lib


_LIB = _load()


def available() -> bool:
    return _LIB is not None


def _i64(a: npt.NDArray[np.int64]) -> I64:
    return np.ascontiguousarray(a, dtype=np.int64)


def longest_native(order: I64, first: B, w: I64, xs: I64, xd: I64, xw: I64,
                   anchor: I64) -> tuple[I64, I64] | None:
    """(t per node, entry per chain position) as solve.longest computes them, or None."""
    if _LIB is None:
        return None
    n, m = len(anchor), len(order)
    if len(first) != m or len(w) != m or not len(xs) == len(xd) == len(xw):
        return None
    flags = np.ascontiguousarray(first, dtype=np.bool_).view(np.uint8)  # no copy
    arrays = [_i64(order), _i64(w), _i64(xs), _i64(xd), _i64(xw), _i64(anchor)]
    t = np.empty(n, dtype=np.int64)
    entry = np.empty(m, dtype=np.int64)
    # the pass's work space, allocated here: numpy backs allocations of several MB with
    # huge pages, where the library's own calloc faulted in 4 KB pages (a third of a 1 GB
    # report's page faults)
    work = np.empty(max(int(_LIB.gl_work(n, m, len(xs))), 1), dtype=np.int64)
    o, ww, s, d, x, a = (arr.ctypes.data for arr in arrays)
    f = flags.ctypes.data
    rc = _LIB.gl_longest(n, m, o, f, ww, len(xs), s, d, x, a, t.ctypes.data,
                         entry.ctypes.data, work.ctypes.data)
    return (t, entry) if rc == 0 else None


Chains = tuple[I64, B, I64, npt.NDArray[np.int8], I64]


def chains_native(ev: I64, depth: I64, parent: I64, ts: I64, end: I64, lane: I64,
                  blocking_end: B, hta: bool, dependency: int, operator: int,
                  ) -> Chains | None:
    """build._host_chains' (order, first, w, kind, owner) for host events sorted as ``ev``
    with their nesting, or None (no library, or it declined: the numpy path then)."""
    if _LIB is None:
        return None
    n = len(ev)
    if not len(depth) == len(parent) == len(ts) == len(end) == len(lane) == n or \
            len(blocking_end) < n:
        return None
    arrays = [_i64(ev), _i64(depth), _i64(parent), _i64(ts), _i64(end), _i64(lane)]
    flags = np.ascontiguousarray(blocking_end[:n], dtype=np.bool_).view(np.uint8)
    order = np.empty(2 * n, dtype=np.int64)
    first = np.empty(2 * n, dtype=np.bool_)
    w = np.empty(2 * n, dtype=np.int64)
    kind = np.empty(2 * n, dtype=np.int8)
    owner = np.empty(2 * n, dtype=np.int64)
    work = np.empty(max(2 * n, 1), dtype=np.int64)
    e, d, p, t, x, ln = (a.ctypes.data for a in arrays)
    rc = _LIB.gl_chains(n, t, x, ln, flags.ctypes.data, int(hta), e, d, p, dependency,
                        operator, order.ctypes.data, first.ctypes.data, w.ctypes.data,
                        kind.ctypes.data, owner.ctypes.data, work.ctypes.data)
    return (order, first, w, kind, owner) if rc == 0 else None
