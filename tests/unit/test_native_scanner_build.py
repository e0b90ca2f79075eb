"""The native scanner is built wherever a C compiler is, and its source is warning-free.

Apart from test_native_scanner.py, whose tests skip when the scanner is not built: this one
must fail then (a silent fallback would hide a broken build from CI).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from stepscope.formats.kineto import scan


def test_the_scanner_is_built_where_a_compiler_is() -> None:
    # setup.sh builds it; a silent fallback would hide a broken build from CI
    off = bool(os.environ.get("STEPSCOPE_NO_NATIVE"))  # turned off on purpose
    assert shutil.which("cc") is None or off or scan.available()


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_scan_c_compiles_without_warnings() -> None:
    # the build script tolerates warnings (a user's compiler may warn where ours does not);
    # our own compiler must not
    source = Path(scan.__file__).with_name("scan.c")
    built = subprocess.run(["cc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                            str(source)], capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
