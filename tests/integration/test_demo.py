"""The built-in demo: the slow run shows its problems in the trace, the fixed run is faster."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import stepscope
from stepscope.cli.main import main
from stepscope.demo import DemoResult, run_demo
from stepscope.model import Trace
from stepscope.report.bundle import find_bundle

pytest.importorskip("torch")

SLOW_LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
FAST_LOADER = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> DemoResult:
    return run_demo(str(tmp_path_factory.mktemp("demo")), steps=8, quiet=True)


def _ranges(trace: Trace, name: str) -> tuple[np.ndarray, np.ndarray]:
    ids = [i for i, s in enumerate(trace.strings) if s == name]
    mask = np.isin(trace.host.name, ids)
    return trace.host.ts[mask], trace.host.end[mask]


def _steps(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    ids = [i for i, s in enumerate(trace.strings) if s.startswith("ProfilerStep#")]
    mask = np.isin(trace.host.name, ids)
    return trace.host.ts[mask], trace.host.end[mask]


def _per_step(trace: Trace, name: str, *, outside: str | None = None) -> list[int]:
    """Calls of ``name`` per profiler step, optionally not inside ``outside`` ranges."""
    s_ts, s_end = _steps(trace)
    ts, _ = _ranges(trace, name)
    if outside is not None:
        o_ts, o_end = _ranges(trace, outside)
        inside = ((ts[:, None] >= o_ts[None, :]) & (ts[:, None] < o_end[None, :])).any(1)
        ts = ts[~inside]
    return [int(((ts >= a) & (ts < b)).sum()) for a, b in zip(s_ts, s_end, strict=True)]


@pytest.mark.slow
def test_both_runs_report_their_throughput(demo: DemoResult) -> None:
    # How much faster the fixed run is depends on the load beside the test (6.1x, 4.4x and
    # 2.6x on one loaded machine): the traces below pin what the fixes changed instead.
    assert demo.slow_samples_per_s > 0 and demo.fast_samples_per_s > 0
    assert demo.speedup == demo.fast_samples_per_s / demo.slow_samples_per_s


@pytest.mark.slow
def test_slow_trace_shows_the_loader_and_per_step_syncs(demo: DemoResult) -> None:
    trace = stepscope.load(demo.slow_trace, cache=False)
    assert "/before/" in demo.slow_trace.replace("\\", "/")
    assert _per_step(trace, SLOW_LOADER) == [1] * 6  # 8 steps: wait 1, warm-up 1, active 6
    s_ts, s_end = _steps(trace)
    l_ts, l_end = _ranges(trace, SLOW_LOADER)
    share = (l_end - l_ts).sum() / (s_end - s_ts).sum()
    # the input pipeline dominates the slow step: decoding and the model share one thread,
    # so load beside the test slows both alike (the share was 0.67 on an idle machine)
    assert share > 0.4
    # two .item() per step in the training loop: loss and accuracy logging
    assert _per_step(trace, "aten::item", outside=SLOW_LOADER) == [2] * 6
    assert "forward" in trace.strings and "backward" in trace.strings  # annotate ranges


@pytest.mark.slow
def test_fixed_trace_uses_workers_and_rarely_syncs(demo: DemoResult) -> None:
    trace = stepscope.load(demo.fast_trace, cache=False)
    assert _per_step(trace, FAST_LOADER) == [1] * 6
    assert SLOW_LOADER not in trace.strings
    assert sum(_per_step(trace, "aten::item", outside=FAST_LOADER)) == 0


@pytest.mark.slow
def test_cli_tells_the_story_briefly(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """At 80 columns: the before/after summary first, each run's findings in a few lines,
    then the commands to go further, each on one line (it pastes whole); <= 120 lines."""
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.chdir(tmp_path)
    assert main(["demo", "--outdir", "demo", "--steps", "4", "--top", "3"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) <= 120, len(lines)
    prose = [line for line in lines if " report demo/" not in line and " diff demo/" not in line]
    assert max(len(line) for line in prose) <= 80
    order = ["run 1/2 (before the fixes)", "run 2/2 (after the fixes)", "Before / after",
             "Before the fixes: what stepscope found", "After the fixes: what stepscope found",
             "Explore"]
    assert [out.index(s) for s in order] == sorted(out.index(s) for s in order)
    assert "before: ~" in out and "after:  ~" in out and "samples/sec" in out
    assert out.count("─ stepscope report ─") == 0  # the whole reports: --verbose, or the HTML
    before = out[out.index("Before the fixes: what"):out.index("After the fixes: what")]
    assert "Training waits for the input pipeline (DataLoader) [high]" in before
    commands = [line.strip() for line in lines if " report demo/" in line or " diff demo/" in line]
    assert len(commands) == 2  # each whole, on a line of its own
    assert commands[0].endswith(".pt.trace.json.gz") and commands[1].count("demo/") == 2
    built = find_bundle() is not None  # without npm there is no front end to inline
    for when in ("before", "after"):
        html = tmp_path / "demo" / f"report-{when}.html"
        assert (f"HTML report ({when}):" in out) == built == html.exists()
    compare = tmp_path / "demo" / "compare.html"
    assert ("HTML comparison:" in out) == built == compare.exists()
    if built:  # the Compare page's document is the demo's diff
        raw = compare.read_text(encoding="utf-8")
        assert '"schema":"stepscope.diff/1"' in raw and "dataloader" in raw
    assert len(list((tmp_path / "demo" / "before").glob("*.pt.trace.json.gz"))) == 1
    assert len(list((tmp_path / "demo" / "after").glob("*.pt.trace.json.gz"))) == 1


@pytest.mark.slow
def test_cli_verbose_prints_both_reports(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--outdir", str(tmp_path), "--steps", "3", "--top", "3",
                 "--verbose"]) == 0
    out = capsys.readouterr().out
    assert out.index("Run 1/2") < out.index("Run 2/2") < out.index("Before / after")
    assert out.count("─ stepscope report ─") == 2


def test_cli_rejects_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--steps", "2"]) == 2
    assert "--steps must be >= 3" in capsys.readouterr().err


def test_summary_numbers() -> None:
    import io

    from rich.console import Console

    from stepscope.demo.run import _explore, _summary, stepscope_command

    out = io.StringIO()
    _summary(Console(file=out, width=200, color_system=None),
             DemoResult("b/t.json.gz", "a/t.json.gz", 123.4, 1234.5))
    text = out.getvalue()
    assert "[Throughput during profiled window] before: ~123 samples/sec" in text
    assert "[Throughput during profiled window] after:  ~1,234 samples/sec  (10.0x)" in text
    # a CPU run names no CUDA-only fix; a CUDA run names pinned memory
    assert "pin_memory" not in text and "persistent_workers=True);" in text
    out = io.StringIO()
    _summary(Console(file=out, width=200, color_system=None),
             DemoResult("b/t.json.gz", "a/t.json.gz", 123.4, 1234.5, device="cuda"))
    assert "persistent_workers=True, pin_memory=True);" in out.getvalue()
    out = io.StringIO()
    _explore(Console(file=out, width=40, color_system=None),
             DemoResult("b/t.json.gz", "a/" + "x" * 60 + ".json.gz", 123.4, 1234.5))
    lines = out.getvalue().splitlines()  # a command longer than the console is not wrapped
    assert f"  {stepscope_command()} report a/{'x' * 60}.json.gz" in lines
    assert DemoResult("b", "a", 0.0, 5.0).speedup == 0.0


def test_stepscope_command_names_the_venv_when_not_on_path(monkeypatch: Any) -> None:
    """A fresh shell has not activated .venv: the demo prints a command that works there."""
    import os
    import shutil
    import sys

    from stepscope.demo.run import stepscope_command

    beside = os.path.join(os.path.dirname(sys.executable), "stepscope")
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    expected = "stepscope" if not os.path.exists(beside) else beside
    got = stepscope_command()
    assert got == expected or os.path.realpath(got) == os.path.realpath(expected)
    monkeypatch.setattr(shutil, "which", lambda _name: beside)
    assert stepscope_command() == "stepscope"


def test_brief_numbers_on_a_real_trace() -> None:
    """The demo's per-run brief (step time, biggest categories, findings) pinned on the
    resnet50 trace, whose numbers do not depend on this machine."""
    import io

    from rich.console import Console
    from tests.conftest import shared_trace

    from stepscope.demo.run import _brief
    from stepscope.report.build import build_report

    path = shared_trace("kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    out = io.StringIO()
    _brief(Console(file=out, width=80, color_system=None), "Before the fixes",
           build_report(stepscope.load(str(path))))
    lines = out.getvalue().splitlines()
    assert lines[1] == "Step 177.59 ms: Kernel 56 %, DataLoader 33 %, CPU exec 8 %."
    assert lines[2] == ("  • Training waits for the input pipeline (DataLoader) [high] saves "
                        "58.98 ms per")
    assert lines[3] == "    step (33 %, replayed)"
