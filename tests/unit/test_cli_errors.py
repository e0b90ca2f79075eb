"""Every bad command line or output path: one line on stderr naming the problem, exit 2,
and nothing lost (no output written before the error, no half-written file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.cli.main import main


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 10, 30)
        b.launch(op, "cudaLaunchKernel", 20, 5, kernel="sgemm", k_ts=30, k_dur=50)
    return b.write(tmp_path)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("argv", "words"), [
    (["report", "x.json", "--top", "-1"], ["stepscope report: error:", "--top", "-1"]),
    (["diff", "a", "b", "--top", "0"], ["stepscope diff: error:", "--top"]),
    (["view", "x", "--port", "abc"], ["stepscope view: error:", "--port", "'abc'"]),
    (["report"], ["stepscope report: error:", "path"]),
    (["report", "x.json", "--format", "xml"], ["--format", "'xml'"]),
    (["nosuchcommand"], ["stepscope: error:", "'nosuchcommand'"]),
    (["--no-such-option"], ["stepscope: error:", "--no-such-option"]),
])
def test_bad_options_are_one_line_exit_2(argv: list[str], words: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2  # returned, not a SystemExit
    line = _one_line(capsys)
    assert "usage:" not in line
    for w in words:
        assert w in line, line
