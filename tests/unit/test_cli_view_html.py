"""`stepscope view` option checks and `stepscope report --html`."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.dashboard_builders import dashboard_trace

from stepscope.cli.main import main
from stepscope.cli.view import parse_path_map
from stepscope.report.bundle import find_bundle


def test_path_map_parsing() -> None:
    assert parse_path_map(["/remote/a=/local/a", "/x=/y=z"]) == (
        ("/remote/a", "/local/a"), ("/x", "/y=z"))


@pytest.mark.parametrize("argv,message", [
    (["view", "/no/such/dir"], "no such file or directory"),
    (["view", ".", "--path-map", "nonsense"], "expected REMOTE_PREFIX=LOCAL_PREFIX"),
    (["view", ".", "--source-link", "vscode://file"], "must contain {path}"),
    (["view", ".", "--port", "0"], "must be 1..65535"),
])
def test_view_rejects_bad_options(argv: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("STEPSCOPE_DEBUG")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and err.count("\n") == 1


@pytest.mark.skipif(find_bundle() is None, reason="front end not built (setup.sh)")
def test_report_html_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = dashboard_trace(tmp_path)
    out = tmp_path / "sub" / "r.html"
    assert main(["report", str(trace), "--html", str(out), "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert f"HTML report: {out}" in captured.err.replace("\n", "")
    assert out.read_text().startswith("<!doctype html>")
