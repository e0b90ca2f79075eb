"""The native libraries are built wherever a C compiler is, and their sources are
warning-free.

Apart from the tests that skip when a library is not built (test_native_scanner.py,
test_native_longest.py): these must fail then (a silent fallback would hide a broken build
from CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from stepscope.analysis.events import native as nest
from stepscope.analysis.graph import native
from stepscope.formats.kineto import scan

SOURCES = [Path(scan.__file__).with_name("scan.c"), Path(native.__file__).with_name("longest.c"),
           Path(nest.__file__).with_name("nest.c")]


def test_the_libraries_are_built_where_a_compiler_is() -> None:
    # setup.sh builds them; a silent fallback would hide a broken build from CI
    off = bool(os.environ.get("STEPSCOPE_NO_NATIVE"))  # turned off on purpose
    assert shutil.which("cc") is None or off or (
        scan.available() and native.available() and nest.available())


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_sources_compile_without_warnings(source: Path) -> None:
    # the build script tolerates warnings (a user's compiler may warn where ours does not);
    # our own compiler must not
    built = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                            str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
