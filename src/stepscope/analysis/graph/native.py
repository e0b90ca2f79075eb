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
ABI = 2  # longest.c's gl_abi(): raise both together when gl_longest's signature changes


def _load() -> ctypes.CDLL | None:
    lib = nativelib.load(LIBRARY, "gl_abi", ABI)
    if lib is None:
        return None
    lib.gl_longest.argtypes = [ctypes.c_int64, ctypes.c_int64, _P, _P, _P, ctypes.c_int64,
                               _P, _P, _P, _P, _P, _P, _P]
    lib.gl_longest.restype = ctypes.c_int64
    lib.gl_work.argtypes = [ctypes.c_int64, ctypes.c_int64, ctypes.c_int64]
    lib.gl_work.restype = ctypes.c_int64
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
