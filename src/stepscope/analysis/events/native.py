"""The native nesting pass (nest.c, built into ``_nest.so``), through ctypes.

``nest_native(start, end)`` returns :func:`stepscope.analysis.events.intervals.nest_sorted`'s
depths and parents, or None when the library is not built or declines the ranges (starts out
of order, a negative length); the caller then runs the numpy definition.
``STEPSCOPE_NO_NATIVE=1`` turns it off (the tests compare both).
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import numpy as np
import numpy.typing as npt

from stepscope import nativelib

LIBRARY = Path(__file__).with_name("_nest.so")
ABI = 1  # nest.c's nest_abi(): raise both together when nest_sorted's signature changes

I64 = npt.NDArray[np.int64]
_P = ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    lib = nativelib.load(LIBRARY, "nest_abi", ABI)
    if lib is None:
        return None
    lib.nest_sorted.argtypes = [ctypes.c_int64, _P, _P, _P, _P, _P]
    lib.nest_sorted.restype = ctypes.c_int64
    return lib


_LIB = _load()


def available() -> bool:
    return _LIB is not None


def nest_native(start: I64, end: I64) -> tuple[I64, I64] | None:
    """(depth, parent position) of each range, as nest_sorted computes them, or None."""
    if _LIB is None or len(start) != len(end):
        return None
    n = len(start)
    s = np.ascontiguousarray(start, dtype=np.int64)
    e = np.ascontiguousarray(end, dtype=np.int64)
    depth = np.empty(n, dtype=np.int64)
    up = np.empty(n, dtype=np.int64)
    work = np.empty(2 * n + 1, dtype=np.int64)
    rc = _LIB.nest_sorted(n, s.ctypes.data, e.ctypes.data, depth.ctypes.data,
                          up.ctypes.data, work.ctypes.data)
    return (depth, up) if rc == 0 else None
