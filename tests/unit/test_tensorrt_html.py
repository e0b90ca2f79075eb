"""``--html`` for TensorRT: ``stepscope report TRT`` and ``stepscope diff A B`` on real trtexec
outputs inline the same document that ``--format json`` prints; an unwritable path is one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import inlined_data, shared_trace

from stepscope.cli.main import main
from stepscope.report.bundle import find_bundle

pytestmark = pytest.mark.skipif(find_bundle() is None, reason="front end not built (setup.sh)")
A100 = "tensorrt/trex/examples/pytorch/resnet/A100"


def inlined(path: Path) -> dict[str, Any]:
    return inlined_data(path.read_text(encoding="utf-8"))


def test_report_html_carries_the_json_report(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    engine = shared_trace(A100) / "qat"
    out = tmp_path / "qat.html"
    assert main(["report", str(engine), "--html", str(out), "--format", "json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    data = inlined(out)
    assert data["report"] == printed and data["trace"] == "qat"
    t = data["report"]["tensorrt"]
    assert len(t["graph"]["nodes"]) == len(t["layers"]) == 37
    assert t["inference_ms"] == printed["tensorrt"]["inference_ms"] > 0


def test_engine_diff_html_carries_the_json_document(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_trace(A100)
    out = tmp_path / "d" / "diff.html"
    a, b = str(root / "fp32"), str(root / "fp16")
    assert main(["diff", a, b, "--html", str(out), "--format", "json"]) == 0
    captured = capsys.readouterr()
    printed = json.loads(captured.out)
    assert f"HTML comparison: {out}" in captured.err.replace("\n", "")
    data = inlined(out)
    assert data["report"] == printed and data["trace"] == f"{a} vs {b}"
    d = data["report"]["tensorrt_diff"]
    assert data["report"]["schema"] == "stepscope.tensorrt-diff/1"
    assert d["a"]["precision"] == "FP32" and d["b"]["precision"] == "FP16"
    assert d["speedup"] == pytest.approx(d["a"]["inference_ms"] / d["b"]["inference_ms"], rel=1e-5)
    # the text output writes the page too
    out.unlink()
    assert main(["diff", a, b, "--html", str(out)]) == 0
    assert inlined(out)["report"] == printed


@pytest.mark.parametrize("argv", [["report", "{a}"], ["diff", "{a}", "{b}"]])
def test_unwritable_html_path_is_one_line(argv: list[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("STEPSCOPE_DEBUG")
    root = shared_trace(A100)
    blocker = tmp_path / "file"
    blocker.write_text("x")  # a file where the page's folder should be
    args = [x.format(a=root / "fp32", b=root / "fp16") for x in argv]
    assert main([*args, "--html", str(blocker / "out.html"), "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert "cannot write the HTML report" in err and "Traceback" not in err
    assert err.count("\n") == 1
