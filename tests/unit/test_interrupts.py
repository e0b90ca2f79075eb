"""Ctrl-C: every interrupt ends in one line, "stepscope: interrupted", and exit 130.

The child (tests/interrupt_child.py) is held at a known point and says so with a marker file;
SIGINT then goes to its whole process group, as a terminal's Ctrl-C does. Nothing here is
timed: the generous timeouts only keep a regression from hanging the suite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.distributed_builders import write_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _interrupt(tmp_path: Path, where: str, args: list[str], markers: int) -> tuple[int, str,
                                                                                     list[int]]:
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("STEPSCOPE_DEBUG", None)
    proc = subprocess.Popen([sys.executable, "-m", "tests.interrupt_child", str(marks), where,
                             *args], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while len(list(marks.iterdir())) < markers:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "the child never got ready"
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    pids = [int(p.name.split(".")[1]) for p in marks.iterdir() if p.name.startswith("worker")]
    return proc.returncode, err.decode(errors="replace"), pids


def _gone(pid: int) -> bool:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_interrupt_with_rank_workers(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    write_run(tmp_path / "run", [100.0, 120.0, 110.0])
    code, err, pids = _interrupt(tmp_path, "workers",
                                 ["report", "--no-cache", "--workers", "2",
                                  str(tmp_path / "run")], markers=2)
    assert code == 130, err
    assert err.strip().splitlines()[-1:] == ["stepscope: interrupted"], err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert len(pids) == 2
    assert all(_gone(p) for p in pids), "a worker outlived the interrupt"


def test_interrupt_during_imports(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    trace.write_text('{"traceEvents": []}')
    code, err, _ = _interrupt(tmp_path, "import", ["report", str(trace)], markers=1)
    assert code == 130, err
    assert err.strip() == "stepscope: interrupted", err
