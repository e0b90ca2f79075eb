"""Loading the optional native libraries (built by scripts/build_native.sh), one rule for
each: none when ``STEPSCOPE_NO_NATIVE`` is set (the tests compare both paths), when the
file was not built or does not load, or when it is a stale build of another source (its
``abi`` function, which takes no argument and returns an int, is missing or returns
another value: a changed signature called through ctypes would corrupt memory); the
caller then takes its numpy path."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path


def load(library: Path, abi: str, expected: int) -> ctypes.CDLL | None:
    if os.environ.get("STEPSCOPE_NO_NATIVE") or not library.is_file():
        return None
    try:
        lib = ctypes.CDLL(str(library))
        check = getattr(lib, abi)
    except (OSError, AttributeError):
        return None
    check.argtypes = []
    check.restype = ctypes.c_int
    return lib if check() == expected else None
