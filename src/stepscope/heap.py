"""Allocator settings for one-shot commands (``stepscope report``).

An analysis of a large trace allocates and frees thousands of numpy temporaries of tens of
MB. glibc's malloc serves every allocation above its mmap threshold (at most 32 MB) with a
fresh ``mmap`` and unmaps it when freed, so the kernel zeroes new pages for each one: at
1 GB, a quarter of the report's CPU time was page faults and page clearing, most of it for
memory that had been freed a moment before. :func:`reuse_freed_memory` makes malloc keep
freed memory in the heap and serve later allocations from it (the ``M_MMAP_MAX`` and
``M_TRIM_THRESHOLD`` settings of ``mallopt(3)``).

The price: the process never hands freed memory back to the system, so its resident size
stays at its peak until it exits. That suits a command that exits once it has printed
its report (and its forked workers, which inherit the setting); it would not suit a
long-lived process such as the dashboard's server, which therefore never calls it.
Elsewhere than glibc (macOS, musl) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

M_TRIM_THRESHOLD = -1  # mallopt(3) parameters, from glibc's <malloc.h>
M_MMAP_MAX = -4
_NEVER_TRIM = (1 << 31) - 1  # the largest value the int parameter takes


def reuse_freed_memory() -> bool:
    """Keep freed memory in this process's heap for reuse; True when the setting applied.

    ``STEPSCOPE_KEEP_MALLOC=1`` leaves the allocator as it is (to compare the two)."""
    if os.environ.get("STEPSCOPE_KEEP_MALLOC") or not _glibc():
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success; no mmap'd chunks, and the heap's top never trimmed
    return bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, _NEVER_TRIM))


def _glibc() -> bool:
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):  # no confstr, or no such name here
        return False
