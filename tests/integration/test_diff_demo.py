"""stepscope diff on demo captures: the fixes are found, a re-run of the same variant is not."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from stepscope.analysis.compare.diff import Diff, diff_runs
from stepscope.analysis.compare.gate import evaluate, parse
from stepscope.report.diff_load import summarise_trace

pytest.importorskip("torch")

from stepscope.demo.train import FIXED, SLOW, train_profiled

# The demo's fixes without its loader worker processes: decoding once is what shrinks the
# DataLoader category, by far more than the noise. Worker processes on a 2-core machine with
# other jobs beside it can be starved for a whole capture (the diff then read "no significant
# change" even after a retake, 1 run in 3 of the suite under two CPU hogs); test_demo runs
# the demo's own variant.
FIXED = dataclasses.replace(FIXED, num_workers=0)

STEPS = 9  # wait 1 + warm-up 1 + 7 profiled steps: the rank test holds on a loaded machine too
BATCH = 32


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    out = {}
    for key, variant in (("slow", SLOW), ("fixed", FIXED), ("fixed_again", FIXED)):
        d = tmp_path_factory.mktemp(key)
        out[key] = train_profiled(variant, str(d), steps=STEPS, batch_size=BATCH,
                                  device="cpu").trace
    return out


def _diff(captures: dict[str, str], base: str, new: str) -> Diff:
    return diff_runs(summarise_trace(captures[base]), summarise_trace(captures[new]))


@pytest.mark.slow
def test_demo_fixes_show_as_a_dataloader_improvement(captures: dict[str, str],
                                                     tmp_path: Path) -> None:
    d = _diff(captures, "slow", "fixed")
    if d.verdict != "improvement":
        # Load beside the test can slow one whole capture (a real shift the diff rightly
        # reports): capture both again once, back to back.
        for key, variant in (("slow", SLOW), ("fixed", FIXED)):
            captures[key] = train_profiled(variant, str(tmp_path / key), steps=STEPS,
                                           batch_size=BATCH, device="cpu").trace
        d = _diff(captures, "slow", "fixed")
    assert (d.base.steps, d.new.steps) == (STEPS - 2, STEPS - 2)
    # What does not depend on the machine's speed: the direction and its significance, and
    # which category shrinks (the fixed run decodes the data once: its loader has almost
    # nothing left to do). How much faster depends on the load beside the test: it was
    # pinned at < -40 % and failed ~1 in 4 under load (-38.2 %).
    assert d.verdict == "improvement"
    assert d.step.pct is not None and d.step.pct < 0
    assert d.main_change == "dataloader"
    loader = next(c for c in d.categories if c.name == "dataloader")
    assert loader.change.pct is not None and loader.change.pct < -50
    assert loader.share_pct is not None and loader.share_pct > 50
    # the slow run's per-step .item() syncs and loader work are gone from the operators
    gone = {o.name for o in d.operators if o.status == "removed"}
    assert "aten::item" in gone or any(o.name == "aten::item" and o.status == "faster"
                                       for o in d.operators)
    gate = evaluate(d, [parse("step_time>+5%")])
    assert not gate[0].broken
    reverse = evaluate(_diff(captures, "fixed", "slow"), [parse("step_time>+5%")])
    assert reverse[0].broken and "significant" in reverse[0].reason


@pytest.mark.slow
def test_rerun_of_the_same_variant_does_not_trip_the_gate(captures: dict[str, str],
                                                         tmp_path: Path) -> None:
    rules = [parse("step_time>+5%"), parse("category:dataloader>+10%")]
    gate = evaluate(_diff(captures, "fixed", "fixed_again"), rules)
    if any(g.broken for g in gate):
        # Load from other processes on a shared 2-core machine can slow one whole capture
        # (a real shift the gate rightly reports); capture the pair again, back to back.
        for key in ("fixed", "fixed_again"):
            captures[key] = train_profiled(FIXED, str(tmp_path / key), steps=STEPS,
                                           batch_size=BATCH, device="cpu").trace
        gate = evaluate(_diff(captures, "fixed", "fixed_again"), rules)
    assert not any(g.broken for g in gate), [g.reason for g in gate]


@pytest.mark.slow
def test_run_demo_reports_the_diff(tmp_path: Path) -> None:
    from rich.console import Console

    from stepscope.demo import run_demo

    console = Console(record=True, width=120)
    result = run_demo(str(tmp_path), steps=6, batch_size=BATCH, device="cpu", quiet=False,
                      console=console)
    assert result.diff is not None
    # the fixed run decodes the data once, so its loader has almost nothing left to do;
    # which category moved most in absolute terms depends on the load beside the test
    # (under two concurrent suites the CPU-exec noise outgrew it once)
    loader = next(c for c in result.diff.categories if c.name == "dataloader")
    assert loader.change.delta < 0
    assert loader.change.pct is not None and loader.change.pct < -50
    text = console.export_text()
    assert "[Throughput during profiled window] before:" in text
    assert "stepscope diff: step time" in text and "DataLoader:" in text
    assert " diff " in text  # the command to compare the two traces again
