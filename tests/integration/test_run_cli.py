"""`stepscope run -- python script.py`: exit code, stdout and stderr pass through; a trace
is written and reported."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import stepscope
from stepscope.cli.run import build_command
from stepscope.errors import UsageError

pytest.importorskip("torch")

TRAIN = textwrap.dedent("""
    import sys
    import torch
    print("hello from", sys.argv[0], sys.argv[1:], __name__)
    print("to stderr", file=sys.stderr)
    model = torch.nn.Linear(16, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(int(sys.argv[1])):
        model(torch.randn(8, 16)).sum().backward()
        opt.step()
        opt.zero_grad()
    sys.exit(int(sys.argv[2]))
""")


def _stepscope(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    # `python` in the command must be this interpreter, as in an activated venv
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return subprocess.run([sys.executable, "-c", "from stepscope.cli.main import entry_point;"
                           " entry_point()", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_exit_code_output_and_trace(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    proc = _stepscope("run", "--logdir", "logs", "--run", "r", "--", "python", "train.py",
                       "8", "3", cwd=tmp_path)
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout.startswith("hello from train.py ['8', '3'] __main__\n")
    assert "to stderr" in proc.stderr
    traces = sorted((tmp_path / "logs" / "r").glob("*.pt.trace.json.gz"))
    assert len(traces) == 1
    assert "trace written to" in proc.stderr and "optimizer step" in proc.stderr
    assert "stepscope report" in proc.stdout  # the report follows the script's output
    trace = stepscope.load(str(traces[0]), cache=False)
    steps = sorted(s for s in trace.strings if s.startswith("ProfilerStep#"))
    assert steps == ["ProfilerStep#2", "ProfilerStep#3", "ProfilerStep#4"]


def test_exception_and_module_mode(tmp_path: Path) -> None:
    pkg = tmp_path / "job"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "__main__.py").write_text("import sys\nprint('argv', sys.argv[1:])\n"
                                     "raise RuntimeError('broken ' + sys.argv[1])\n")
    proc = _stepscope("run", "--no-report", "--", "python", "-m", "job", "x", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == "argv ['x']\n"
    assert "RuntimeError: broken x" in proc.stderr
    assert "runner.py" not in proc.stderr  # the traceback is the script's, not ours
    assert "no trace written" in proc.stderr


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    for args in (["run"], ["run", "--", "python", "missing.py"], ["run", "--", "ls"],
                 ["run", "--", "python", "-c", "pass"]):
        proc = _stepscope(*args, cwd=tmp_path)
        assert proc.returncode == 2, args
        assert proc.stderr.startswith("stepscope: error: ") and proc.stderr.count("\n") == 1


def test_build_command_forms(tmp_path: Path) -> None:
    script = tmp_path / "t.py"
    script.write_text("")
    cmd = build_command(["--", sys.executable, "-u", "-X", "dev", str(script), "--lr", "1"])
    assert cmd.argv[0] == sys.executable
    assert cmd.argv[1:4] == ["-u", "-X", "dev"]
    assert cmd.argv[4] == "-c" and cmd.argv[6:] == [str(script), "--lr", "1"]
    bare = build_command([str(script), "a"])
    assert bare.argv[0] == sys.executable and bare.argv[-2:] == [str(script), "a"]
    module = build_command(["-m", "pkg.train", "--x"])
    assert module.argv[-3:] == ["-m", "pkg.train", "--x"] and module.description == "-m pkg.train"
    with pytest.raises(UsageError):
        build_command(["torchrun", "t.py"])


def test_repeat_cycles_are_one_process_spans(tmp_path: Path) -> None:
    """`--repeat 2` writes two captures of one process ({host}_{pid}.{ms}): `report DIR`
    gives that process's findings per capture, never a run of 2 ranks (issue 21, item 10)."""
    import json

    (tmp_path / "train.py").write_text(TRAIN)
    proc = _stepscope("run", "--logdir", "logs", "--run", "r", "--repeat", "2", "--no-report",
                       "--", "python", "train.py", "14", "0", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    traces = sorted((tmp_path / "logs" / "r").glob("*.pt.trace.json.gz"))
    assert len(traces) == 2
    assert len({t.name.split(".")[0] for t in traces}) == 1  # one worker: {host}_{pid}
    # every file written is named, each whole on a line of its own
    assert "stepscope run: 2 traces written, one per cycle" in proc.stderr
    named = [line.strip() for line in proc.stderr.splitlines()
             if line.startswith("  ") and line.endswith(".pt.trace.json.gz")]
    assert "Profiler clears events" not in proc.stderr  # torch's noise, filtered
    assert sorted(Path(n).name for n in named) == [t.name for t in traces], proc.stderr
    assert "all of them: stepscope report " in proc.stderr
    rep = _stepscope("report", "logs/r", "--format", "json", "--executor", "serial",
                     cwd=tmp_path)
    assert rep.returncode == 0, rep.stderr
    doc = json.loads(rep.stdout)
    assert doc["source"]["format"] == "spans" and doc["source"]["traces"] == 2
    assert doc["source"]["processes"] == 1 and "distributed" not in doc
    assert [s["steps"] for s in doc["spans"]] == [3, 3]
    ids = {f["id"] for f in doc["findings"]}
    assert not ids & {"rank-imbalance", "straggler", "low-comm-overlap",
                          "exposed-communication"}
    assert ids == {i for s in doc["spans"] for i in s["findings"]}
    text = _stepscope("report", "logs/r", "--executor", "serial", cwd=tmp_path)
    assert text.returncode == 0 and "2 captures of " in text.stdout
    assert "2 ranks" not in text.stdout and "computation imbalanced" not in text.stdout
