"""`stepscope diff --html`: the page carries exactly the diff JSON; bad outputs fail in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import inlined_data
from tests.diff_builders import training_trace

from stepscope.cli.main import main
from stepscope.report.bundle import find_bundle

pytestmark = pytest.mark.skipif(find_bundle() is None, reason="front end not built (setup.sh)")


def inlined(html: Path) -> dict[str, Any]:
    return inlined_data(html.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pair")
    return {"base": training_trace(d, "base.json", seed=1),
            "slow": training_trace(d, "slow.json", seed=2, mm_scale=1.3)}


def test_html_holds_the_json_diff_and_gate(pair: dict[str, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "diff.html"  # parents are made
    args = ["diff", str(pair["base"]), str(pair["slow"]), "--fail-on", "kernel:sgemm_kernel>+10%"]
    assert main([*args, "--format", "json", "--html", str(out)]) == 1  # the gate still decides
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert f"HTML comparison: {out}" in cap.err
    data = inlined(out)
    assert data["report"] == doc and data["config"]["mode"] == "static"
    assert data["trace"] == f"{pair['base']} vs {pair['slow']}"
    assert "timeline" not in data  # a diff has no timeline: the page shows only Compare
    assert doc["gate"][0]["broken"] is True and doc["kernels"][0]["name"] == "sgemm_kernel"


def test_html_from_a_saved_baseline(pair: dict[str, Path], tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    baseline, out = tmp_path / "baseline.json", tmp_path / "diff.html"
    assert main(["diff", str(pair["base"]), str(pair["base"]), "--save-baseline",
                 str(baseline)]) == 0
    capsys.readouterr()
    assert main(["diff", "--baseline", str(baseline), str(pair["slow"]), "--html", str(out),
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert inlined(out)["report"] == doc
    assert doc["base"]["kind"] == "report" and doc["step_time"]["verdict"] == "regression"


def test_unwritable_html_is_a_one_line_error(pair: dict[str, Path], tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    out = blocker / "diff.html"  # a path below a file
    assert main(["diff", str(pair["base"]), str(pair["slow"]), "--html", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(out) in err[0] and "cannot write" in err[0]
