"""Exit codes a script can rely on: 0 ok, 1 gate failed, 2 usage or input error."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.cli.main import main

ENTRY = [sys.executable, "-c", "from stepscope.cli.main import entry_point; entry_point()"]


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    b.annotation("ProfilerStep#0", 0, 13000)
    for i in range(3000):  # more output than a pipe buffers (64 KiB): the writer meets EPIPE
        b.op(f"aten::op{i}", 1 + i * 4, 3, input_dims=[[i, 2 * i + 1]])
    return b.write(tmp_path, "t.pt.trace.json")


def test_bare_stepscope_prints_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: stepscope") and "report" in err


def test_view_option_with_json_is_refused(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(_trace(tmp_path)), "--format", "json", "--view", "kernels"]) == 2
    assert capsys.readouterr().err.strip() == (
        "stepscope: error: --view kernels chooses text sections; --format json prints every "
        "section (drop --view)")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_closed_pipe_ends_quietly_with_exit_0(tmp_path: Path, fmt: str) -> None:
    """`stepscope report x | head -1`: exit 1 is the gate's code, not a closed pipe's."""
    proc = subprocess.Popen([*ENTRY, "report", str(_trace(tmp_path)), "--format", fmt,
                             "--view" if fmt == "text" else "--top", "operators" if fmt == "text"
                             else "3000", *(["--top", "3000"] if fmt == "text" else [])],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"COLUMNS": "80", "PATH": "/usr/bin:/bin",
                                 "XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()  # the reader goes away, as `head -1` does
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0, err
    assert "Traceback" not in err and "Broken pipe" not in err


@pytest.mark.parametrize("debug", [False, True])
def test_numpy_warnings_stay_off_the_terminal_unless_debugging(debug: bool) -> None:
    # a floating-point warning the fuzz campaign has not reached (it calls main() and fails
    # on any): the console script keeps it off the user's terminal; STEPSCOPE_DEBUG shows it
    code = ("import numpy as np, stepscope.cli.main as m\n"
            "def fake(argv=None):\n"
            "    np.nanmax(np.array([np.nan]))\n"
            "    return 0\n"
            "m.main = fake\n"
            "m.entry_point()\n")
    env = {**os.environ, "STEPSCOPE_DEBUG": "1"} if debug else \
        {k: v for k, v in os.environ.items() if k != "STEPSCOPE_DEBUG"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert run.returncode == 0
    assert ("All-NaN slice" in run.stderr) is debug, run.stderr
