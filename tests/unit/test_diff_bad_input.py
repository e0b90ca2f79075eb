"""stepscope diff: bad inputs get one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.diff_builders import training_trace

from stepscope.cli.main import main


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    return training_trace(tmp_path, "t.json", seed=1, steps=4)


def _one_line_error(capsys: pytest.CaptureFixture[str], *words: str) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("stepscope: error: "), err
    for w in words:
        assert w in err, err
    return err


def test_missing_file(trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(trace), str(tmp_path / "nope.json")]) == 2
    _one_line_error(capsys, "nope.json")


def test_empty_file(trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.json"
    empty.write_text("  \n")
    assert main(["diff", str(empty), str(trace)]) == 2
    _one_line_error(capsys, "empty.json", "empty")


def test_not_a_trace(trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    assert main(["diff", str(trace), str(text)]) == 2
    _one_line_error(capsys, "notes.txt")


def test_different_kinds_of_files(trace: Path, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    trt = tmp_path / "profile.json"
    trt.write_text('[{"count": 10}, {"name": "conv1", "timeMs": 1.0, "averageMs": 0.1}]')
    assert main(["diff", str(trace), str(trt)]) == 2
    _one_line_error(capsys, "cannot compare", "TensorRT")


def test_a_diff_is_not_a_run(trace: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(trace), str(trace), "--format", "json"]) == 0
    d = tmp_path / "d.json"
    d.write_text(capsys.readouterr().out)
    assert main(["diff", str(d), str(trace)]) == 2
    _one_line_error(capsys, "is a diff")


def test_baseline_must_be_a_report(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "--baseline", str(trace), str(trace)]) == 2
    _one_line_error(capsys, "--baseline", "expected a saved JSON report")


def test_wrong_schema_report(trace: Path, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "stepscope.report/9", "steps": []}')
    assert main(["diff", str(bad), str(trace)]) == 2
    _one_line_error(capsys, "r.json")


def test_malformed_report(trace: Path, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "stepscope.report/1", "steps": [{"duration_us": 1}]}')
    assert main(["diff", str(bad), str(trace)]) == 2
    _one_line_error(capsys, "r.json", "malformed")


def test_wrong_number_of_paths(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(trace)]) == 2
    _one_line_error(capsys, "BASE and NEW")


def test_bad_fail_on(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(trace), str(trace), "--fail-on", "speed>5"]) == 2
    _one_line_error(capsys, "--fail-on")


def test_empty_folder(trace: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["diff", str(empty), str(trace)]) == 2
    _one_line_error(capsys, "no trace files")
