"""`stepscope monitor` on real programs (tests/data/monitor/): each verdict pinned.

The scenarios are built so that the deciding share dwarfs the noise of a loaded 2-core
machine: each program spends nearly all of its time in one place (a slow transform, a
matrix product, a device read, a sleep), and the rules read shares of time, never rates.
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.capture.monitor import store
from stepscope.cli.main import main

pytest.importorskip("psutil")
DATA = Path(__file__).parent.parent / "data" / "monitor"
SECONDS = "2.5"


def _monitor(tmp_path: Path, capfd: pytest.CaptureFixture[str], *program: str) -> tuple[
        int, dict[str, Any], str]:
    code = main(["monitor", "--format", "json", "--logdir", str(tmp_path / "logs"),
                 "--run", "r", "--", sys.executable, *program])
    out, err = capfd.readouterr()
    return code, json.loads(out), err  # stdout holds only the JSON


def test_idle(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, data, err = _monitor(tmp_path, capfd, str(DATA / "idle.py"), SECONDS)
    assert code == 0
    assert "idle done" in err  # the program's stdout went to stderr
    v = data["verdict"]
    assert v["bound"] == "idle", v
    assert v["evidence"]["main_demand"] < 0.3
    # the contract: schema, samples beside the JSON, summaries
    assert data["schema"] == "stepscope.monitor/1"
    written = tmp_path / "logs" / "r"
    assert json.loads((written / "monitor.json").read_text())["verdict"]["bound"] == "idle"
    samples = store.read(str(written / "monitor.parquet"))
    t = [float(x) for x in samples.series("t")]
    assert samples.n == data["samples"] == len(t)
    # sampled at --hz (10) through the run, whatever the load: ticks are due at fixed
    # times, so the typical gap is the period even when a busy machine makes some late
    # (a count of ticks would flip when a few are skipped), and the program sleeps 2.5 s
    # after the sampler's first reading
    assert statistics.median(b - a for a, b in itertools.pairwise(t)) == pytest.approx(
        0.1, abs=0.05)
    assert t[-1] >= 2.0
    assert {"cpu", "main_cpu", "main_rss"} <= set(data["metrics"])
    assert data["phases_timed"] is False  # no torch imported: no hooks, no torch import


def test_io_bound(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    code, data, _ = _monitor(tmp_path, capfd, str(DATA / "storage.py"), SECONDS,
                             str(tmp_path))
    if code == 3:
        pytest.skip("the file system of the temporary folder refuses O_DIRECT")
    assert code == 0
    v = data["verdict"]
    assert v["bound"] == "io"
    assert v["evidence"]["main_io"] >= 0.3
    assert v["evidence"]["read_bytes_per_s"] > 0


@pytest.mark.parametrize(("workers", "saturated"), [("0", False), ("2", True)])
def test_input_bound(tmp_path: Path, capfd: pytest.CaptureFixture[str], workers: str,
                     saturated: bool) -> None:
    pytest.importorskip("torch")
    code, data, err = _monitor(tmp_path, capfd, str(DATA / "loader.py"), SECONDS, workers)
    assert code == 0, err
    v = data["verdict"]
    assert v["bound"] == "input", v
    assert v["evidence"]["data_share"] >= 0.3
    assert v["evidence"]["workers"] == int(workers), v
    assert data["phases_timed"] is True
    assert data["throughput"]["batches"] > 0 and data["throughput"]["samples_per_s"] > 0
    if saturated:
        assert v["evidence"]["worker_demand"] >= 0.8, v
        assert "2 workers saturated" in v["next_step"]
    else:
        assert "num_workers=0" in v["next_step"]


def test_cpu_bound(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    code, data, err = _monitor(tmp_path, capfd, str(DATA / "compute.py"), SECONDS)
    assert code == 0, err
    v = data["verdict"]
    assert v["bound"] == "cpu"
    ev = v["evidence"]
    assert ev["forward_share"] + ev["backward_share"] + ev["optimizer_share"] >= 0.5
    assert ev["data_share"] == 0
    assert data["throughput"]["steps"] > 0
    assert data["window"]["from_steps"] is True


def test_context_manager(tmp_path: Path) -> None:
    """``with stepscope.monitor():`` around a pure-Python busy loop: CPU-bound."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(stepscope.__file__).parent.parent),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(DATA / "block.py"), SECONDS, str(tmp_path)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["bound"] == "cpu"
    assert result["evidence"]["main_demand"] >= 0.7
    assert (tmp_path / "block" / "monitor.json").exists()
    assert (tmp_path / "block" / "monitor.parquet").exists()


def test_run_monitor_writes_beside_the_trace(tmp_path: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    """``stepscope run --monitor``: the trace and the monitor files in one run folder."""
    pytest.importorskip("torch")
    code = main(["run", "--monitor", "--no-report", "--logdir", str(tmp_path), "--run", "rm",
                 "--", sys.executable, str(DATA / "compute.py"), "1.5"])
    out, err = capfd.readouterr()
    assert code == 0, err
    folder = tmp_path / "rm"
    assert list(folder.glob("*.pt.trace.json*"))
    data = json.loads((folder / "monitor.json").read_text())
    assert data["verdict"]["bound"] == "cpu"
    assert data["phases_timed"] is True and data["throughput"]["steps"] > 0
    assert "bound: cpu" in out
    # the run folder still reports as before: monitor.json is not taken for a rank
    assert main(["report", str(folder)]) == 0
    out, err = capfd.readouterr()
    assert "monitor.json" not in out + err
    assert main(["report", str(folder / "monitor.json")]) == 2
    assert "a stepscope monitor file" in capfd.readouterr().err


def test_lightning_callback(tmp_path: Path) -> None:
    """``MonitorCallback`` around a Lightning fit: steps counted, phases exclusive."""
    pytest.importorskip("pytorch_lightning")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(stepscope.__file__).parent.parent),
                                         env.get("PYTHONPATH", "")])
    done = subprocess.run([sys.executable, str(DATA / "lightning_fit.py"), "2500",
                           str(tmp_path)], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    data = json.loads(done.stdout)
    assert data["verdict"]["bound"] == "cpu"
    assert data["throughput"]["steps"] > 0 and data["phases_timed"] is True
    # forward and backward run inside Lightning's optimizer.step(closure): exclusive
    # phases never add up to more than the window
    assert sum(data["phases"].values()) <= 1.0 + 1e-6
    assert data["phases"]["forward"] > 0 and data["phases"]["backward"] > 0
    assert (tmp_path / "fit" / "monitor.parquet").exists()


def test_program_failure_keeps_its_exit_code(tmp_path: Path,
                                             capfd: pytest.CaptureFixture[str]) -> None:
    script = tmp_path / "fail.py"
    script.write_text("import sys, time\ntime.sleep(0.3)\nprint('bye')\nsys.exit(7)\n")
    code, data, _ = _monitor(tmp_path, capfd, str(script))
    assert code == 7
    assert data["exit_code"] == 7
    script.write_text("raise ValueError('boom')\n")
    code = main(["monitor", "--logdir", str(tmp_path / "logs"), "--", sys.executable,
                 str(script)])
    out, err = capfd.readouterr()
    assert code == 1
    assert "ValueError: boom" in err and "runpy" not in err
    assert "bound:" in out  # the text report still comes


def test_text_report_fits_80_columns(tmp_path: Path,
                                     capfd: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code = main(["monitor", "--logdir", str(tmp_path), "--", sys.executable,
                 str(DATA / "idle.py"), SECONDS])  # a verdict needs 5 ticks: 25, not 10
    out, _ = capfd.readouterr()
    assert code == 0
    assert "bound: idle" in out
    assert "▁" in out or "█" in out  # sparklines
    # every line fits but one a path too long to cut makes wide (kept whole: it pastes)
    wide = [line for line in out.splitlines() if len(line) > 80]
    assert all(len(max(line.split(), key=len)) > 40 for line in wide), wide
    assert any(line.startswith("samples: ") and line.endswith("monitor.parquet")
               for line in out.splitlines())


@pytest.mark.parametrize("argv", [
    ["monitor"],
    ["monitor", "--", "ls"],
    ["monitor", "--hz", "0", "--", "python", "x.py"],
    ["monitor", "--hz", "1000", "--", sys.executable, os.path.abspath(__file__)],
    ["monitor", "--", sys.executable, "no-such-script.py"],
])
def test_errors_are_one_line_exit_2(argv: list[str], capfd: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    _, err = capfd.readouterr()
    assert len(err.strip().splitlines()) == 1
