"""A wheel built from a clean clone carries the dashboard; a bare install names missing extras.

Builds the wheel from a `git clone` of this checkout's HEAD (the build hook runs the Vite
build, since the bundle is not committed), installs it into a fresh virtual environment
with only the core dependencies, and runs the command as a user would.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest
from tests.builders import TraceBuilder

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("npm") is None or shutil.which("git") is None,
                       reason="needs git and npm (the wheel's build hook builds the front end)"),
]


def _run(cmd: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600,
                          stdin=subprocess.DEVNULL)


def test_wheel_from_a_clean_clone(tmp_path: Path) -> None:
    clone = tmp_path / "clone"
    assert _run(["git", "clone", "-q", str(ROOT), str(clone)]).returncode == 0
    built = _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                  str(tmp_path / "dist"), str(clone)])
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (tmp_path / "dist").glob("stepscope-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "stepscope/report/static/index.html" in names
    assert "stepscope/report/static/assets/app.js" in names
    assert "stepscope/report/metrics.md" in names  # the MCP server's explain_metric reads it
    if shutil.which("cc"):  # the native libraries, and so a wheel for this platform only
        assert "stepscope/formats/kineto/_scan.so" in names
        assert "stepscope/analysis/graph/_longest.so" in names
        assert "stepscope/analysis/events/_nest.so" in names
        assert not wheel.name.endswith("-none-any.whl"), wheel.name

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    installed = _run([str(py), "-m", "pip", "install", "-q", str(wheel)])
    assert installed.returncode == 0, installed.stderr[-2000:]
    exe = str(env_dir / "bin" / "stepscope")

    b = TraceBuilder()
    b.annotation("ProfilerStep#0", 0, 1000)
    b.op("aten::mm", 10, 500)
    trace = b.write(tmp_path, "t.pt.trace.json")
    report = _run([exe, "report", str(trace), "--format", "json"])
    assert report.returncode == 0, report.stderr
    native = _run([str(py), "-c", "from stepscope.formats.kineto import scan; "
                   "print(scan.available())"])
    assert native.stdout.strip() == str(shutil.which("cc") is not None)
    assert json.loads(report.stdout)["schema"] == "stepscope.report/1"

    view = _run([exe, "view", str(trace)])  # the dashboard is the `web` extra
    assert view.returncode == 2
    assert view.stderr.strip().splitlines() == [
        "stepscope view: needs the 'web' extra (starlette is not installed): "
        "pip install 'stepscope[web]'"]
    sql = _run([exe, "sql", str(trace), "SELECT count(*) FROM host_ops"])  # the `sql` extra
    assert sql.returncode == 2
    assert sql.stderr.strip().splitlines() == [
        "stepscope sql: needs the 'sql' extra (duckdb is not installed): "
        "pip install 'stepscope[sql]'"]
    mcp = _run([exe, "mcp"])  # the `mcp` extra
    assert mcp.returncode == 2
    assert mcp.stderr.strip().splitlines() == [
        "stepscope mcp: cannot start (No module named 'mcp'): pip install 'stepscope[mcp]'"]
