"""stepscope.heap: a one-shot command's allocator keeps freed memory for reuse."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# Resident memory after allocating, touching and freeing 64 MB, in a fresh interpreter (the
# setting lasts for the process: never change the test process's own allocator).
PROBE = """
import sys, numpy as np
from stepscope.heap import reuse_freed_memory
applied = reuse_freed_memory() if sys.argv[1] == "reuse" else False
def rss():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * 4096
a = np.ones(64 << 20, dtype=np.uint8)
held = rss()
del a
print(applied, held - rss())
"""

glibc_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not os.confstr("CS_GNU_LIBC_VERSION").startswith(
        "glibc"), reason="mallopt settings are glibc's")


def _probe(mode: str, **env: str) -> tuple[bool, int]:
    base = {k: v for k, v in os.environ.items() if k != "STEPSCOPE_KEEP_MALLOC"}  # conftest's
    out = subprocess.run([sys.executable, "-c", PROBE, mode], check=True, text=True,
                         capture_output=True, env={**base, **env}).stdout.split()
    return out[0] == "True", int(out[1])


@glibc_linux
def test_freed_memory_stays_for_reuse() -> None:
    applied, returned = _probe("reuse")
    assert applied
    assert returned < 8 << 20  # the 64 MB stayed in the heap


@glibc_linux
def test_without_it_freed_memory_goes_back() -> None:
    applied, returned = _probe("plain")
    assert not applied
    assert returned > 56 << 20  # glibc unmapped it at once


@glibc_linux
def test_the_environment_can_leave_the_allocator_alone() -> None:
    applied, returned = _probe("reuse", STEPSCOPE_KEEP_MALLOC="1")
    assert not applied
    assert returned > 56 << 20
