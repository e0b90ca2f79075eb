"""``stepscope report`` in-process: text, JSON, --top, --step, errors, the cache."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from tests.builders import TraceBuilder

import stepscope.formats.load as load_mod
from stepscope.cli.main import main
from stepscope.io.cache import cache_dir


def _gpu_trace(tmp_path: Path, tag: str = "") -> Path:
    b = TraceBuilder()
    for n, t0 in ((1, 0), (2, 100)):
        b.annotation(f"ProfilerStep#{n}", t0, 100)
        mm = b.op("aten::mm", t0 + 10, 30)
        b.launch(mm, "cudaLaunchKernel", t0 + 20, 5, kernel="sgemm", k_ts=t0 + 30, k_dur=50,
                 **{"blocks per SM": 2, "est. achieved occupancy %": 25})
        b.op("aten::relu", t0 + 50, 20)
    if tag:
        b.annotation(tag, 0, 1)  # makes the content (and the cache key) unique
    return b.write(tmp_path)


def _annotation_trace(tmp_path: Path) -> Path:
    """Only user annotations: no operator or kernel rows in the report."""
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    b.annotation("ProfilerStep#2", 100, 60)
    b.annotation("forward", 10, 50)
    return b.write(tmp_path)


def test_text_output_contains_key_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["report", str(_gpu_trace(tmp_path))]) == 0
    out = capsys.readouterr().out
    assert "Step time: 100.0 µs on average over 2 steps" in out
    assert re.search(r"\nKernel +50\.0 +50\.0 ", out)  # kernel µs per step, share of it
    gpu_row = next(line for line in out.splitlines() if line.startswith("0 NVIDIA H100"))
    assert gpu_row.split()[-4:] == ["50.00", "50.00", "25.00", "0.00"]  # util, SM eff, occ, TC
    assert "aten::mm" in out and "sgemm" in out
    assert "NVIDIA H100 80GB HBM3" in out


def test_step_selects_one_step_text(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["report", str(_gpu_trace(tmp_path)), "--step", "2"]) == 0
    assert "over 1 step" in capsys.readouterr().out


def test_json_annotation_only_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_annotation_trace(tmp_path))
    assert main(["report", path, "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["schema"] == "stepscope.report/1"
    assert [(s["name"], s["duration_us"]) for s in d["steps"]] == [("1", 100.0), ("2", 60.0)]
    assert d["breakdown"]["step_avg_us"] == 80.0
    assert main(["report", path, "--format", "json", "--step", "2"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in d["steps"]] == ["2"]


def test_json_format_top_and_step(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_gpu_trace(tmp_path))
    assert main(["report", path, "--format", "json", "--top", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [o["name"] for o in d["operators"]] == ["aten::mm"]
    assert len(d["kernels"]) == 1
    assert d["gpu"][0]["utilization_pct"] == 50.0
    assert main(["report", path, "--format", "json", "--step", "1"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in d["steps"]] == ["1"]


def test_missing_step_exits_2_with_one_line(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(_gpu_trace(tmp_path)), "--step", "9"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "stepscope: error: step 9 is not in the trace (steps: 1, 2)\n"


def test_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path / "nope.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("stepscope: error:") and err.count("\n") == 1
    assert "nope.json" in err


def test_second_run_hits_the_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    assert os.environ["XDG_CACHE_HOME"] in str(cache_dir())  # the autouse fixture's
    path = str(_gpu_trace(tmp_path, tag="cache-test-unique"))
    assert main(["report", path]) == 0
    first = capsys.readouterr().out

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("the trace was parsed again")

    monkeypatch.setattr(load_mod, "read_kineto", fail)
    assert main(["report", path]) == 0  # served from the Arrow cache
    assert capsys.readouterr().out == first
    with pytest.raises(AssertionError, match="parsed again"):
        main(["report", path, "--no-cache"])


def test_internal_error_is_one_line_unless_debugging(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import stepscope.cli.report as report_cmd

    def broken(*_: object, **__: object) -> None:
        raise ValueError("boom\nsecond line")

    monkeypatch.setattr(report_cmd, "build_report", broken)
    path = str(_gpu_trace(tmp_path))
    monkeypatch.delenv("STEPSCOPE_DEBUG", raising=False)
    assert main(["report", path]) == 3  # 1 is a failed --fail-on gate's (docs/cli.md)
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "internal error (ValueError: boom second line)" in err
    assert "STEPSCOPE_DEBUG=1" in err and "Traceback" not in err
    monkeypatch.setenv("STEPSCOPE_DEBUG", "1")
    with pytest.raises(ValueError, match="boom"):
        main(["report", path])
