"""Loading the optional native libraries (built by scripts/build_native.sh), one rule for
each: none when ``STEPSCOPE_NO_NATIVE`` is set (the tests compare both paths), when the
file was not built, or when it does not load; the caller then takes its numpy path."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path


def load(library: Path) -> ctypes.CDLL | None:
    if os.environ.get("STEPSCOPE_NO_NATIVE") or not library.is_file():
        return None
    try:
        return ctypes.CDLL(str(library))
    except OSError:
        return None
