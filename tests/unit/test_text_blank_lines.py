"""The terminal output at 80 columns has no stray blank lines nor trailing spaces (issue 26
item 9): `whatif` starts on its first line; a CPU trace's report has no empty section."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepscope.cli.main import main

RUN = Path(__file__).resolve().parents[1] / "data" / "monitor_run" / "loader"
TRACE = str(RUN / "vm_13337.1795509081314.pt.trace.json.gz")


def layout_problems(text: str) -> list[str]:
    lines = text.split("\n")
    out = [f"line {i + 1}: trailing space" for i, s in enumerate(lines) if s != s.rstrip()]
    if lines[0] == "":
        out.append("leading blank line")
    out += [f"line {i + 1}: second blank line" for i in range(1, len(lines) - 1)
            if lines[i] == "" and lines[i - 1] == ""]
    if lines[-1] != "" or (len(lines) > 1 and lines[-2] == ""):
        out.append("not one newline at the end")
    return out


@pytest.mark.parametrize("argv", [
    ["whatif", TRACE, "--apply", "drop_dataloader_wait"],
    ["whatif", TRACE, "--apply", "drop_dataloader_wait", "--apply", "drop_sync"],
    ["report", TRACE, "--view", "all"],
    ["report", TRACE],
    ["report", TRACE, "--view", "kernels"],
    ["report", str(RUN), "--executor", "serial"],
])
def test_text_at_80_columns(argv: list[str], capsys: pytest.CaptureFixture[str],
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main([*argv, "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert layout_problems(out) == []
    if argv[0] == "whatif":
        assert out.startswith("What if (replayed step, docs/whatif.md): 17.72 ms → 2.82 ms")
