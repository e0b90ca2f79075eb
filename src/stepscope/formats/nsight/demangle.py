"""Itanium C++ name demangling for kernel names, as ``nsys stats`` shows them.

Uses the pure-Python ``itanium_demangler`` package (extra ``stepscope[nsys]``) when it is
installed, else ``c++filt`` when it is on PATH, else leaves names as they are. Called once
per distinct name, never per event.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from functools import lru_cache


def is_mangled(name: str) -> bool:
    return name.startswith("_Z")


@lru_cache(maxsize=1)
def _cxxfilt() -> str | None:
    return shutil.which("c++filt")


def demangle_all(names: Sequence[str]) -> list[str]:
    """Demangled form of each name; names that are not mangled (or fail) come back as is."""
    out = list(names)
    todo = [i for i, n in enumerate(names) if is_mangled(n)]
    if not todo:
        return out
    try:
        import itanium_demangler

        for i in todo:
            try:
                parsed = itanium_demangler.parse(names[i])
            except Exception:  # the parser raises on constructs it does not know
                parsed = None
            if parsed is not None:
                out[i] = str(parsed)
        return out
    except ImportError:
        pass
    tool = _cxxfilt()
    if tool is None:
        return out
    try:
        res = subprocess.run(
            [tool], input="\n".join(names[i] for i in todo), capture_output=True, text=True,
            timeout=60, check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return out
    lines = res.stdout.split("\n")
    for i, line in zip(todo, lines, strict=False):
        if line:
            out[i] = line
    return out


def demangle(name: str) -> str:
    return demangle_all([name])[0]
