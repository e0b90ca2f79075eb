"""Savings by replay: a finding whose fix the dependency graph can model (the table in
stepscope.analysis.graph.fixes) gets its saving from re-timing the steps with that fix
applied (``method: "replay"``, the predicted step beside it); the others keep the rule's
own bound (``method: "bound"``). All modelled fixes together give the report's predicted
step (docs/whatif.md)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from stepscope import forked
from stepscope.advice.finding import Finding, severity_for
from stepscope.analysis.graph.fixes import DEVICE_ONLY, NEEDS_NEXT_STEP, RULE_TRANSFORMS
from stepscope.analysis.graph.transforms import parse
from stepscope.analysis.graph.whatif import Replayer, Timing, WindowReplay
from stepscope.analysis.suite import Analyses
from stepscope.forked import Forked


@dataclass(frozen=True)
class Combined:
    """The step with every replayable finding's fix applied at once."""

    before: Timing
    after: Timing
    transforms: tuple[str, ...]
    findings: tuple[str, ...]
    touched: tuple[int, ...]


def _replayer(analyses: Analyses) -> Replayer | None:
    if not analyses.windows or (not analyses.trace.has_gpu and not len(analyses.trace.host)):
        return None
    return Replayer(analyses.trace, analyses.links, list(analyses.windows))


def _after(rp: Replayer, specs: tuple[str, ...]) -> tuple[Timing, tuple[int, ...]]:
    return rp.after(tuple(parse(s) for s in specs))


def _replays(rp: Replayer, specs: tuple[str, ...]
             ) -> dict[tuple[str, ...], WindowReplay] | None:
    """Each finding's own replay, and (ahead of knowing which findings stay) all their
    fixes together; None when the recorded step does not replay (no time). On a large
    graph a forked child replays the findings' own fixes while this process replays the
    recorded step and all fixes together (measured at 1 GB: ~1.4 s each side): the same
    results, on both cores."""
    singles = [(s,) for s in specs]
    theirs = singles if rp.graph.events else []
    child = Forked(lambda: [_after(rp, sp) for sp in theirs],
                   enabled=bool(theirs) and forked.worth_it(rp.graph.events))
    try:
        if rp.before.step_ns <= 0:
            return None
        runs = {sp: rp.run(tuple(parse(s) for s in sp))
                for sp in dict.fromkeys([*singles, specs]) if sp not in theirs}
        for sp, (after, touched) in zip(theirs, child.result(), strict=True):
            runs[sp] = WindowReplay(rp.window, rp.before, after, touched)
    finally:
        child.close()
    return runs


def replay_findings(analyses: Analyses, findings: list[Finding],
                    min_pct: float = 0.0) -> tuple[list[Finding], Combined | None]:
    """The findings with replayed savings, and every reported replayed fix applied at once:
    a fix whose own replay saves under ``min_pct`` % of the step is a finding the report
    drops, so it is not among the fixes applied together either."""
    one_window = len(analyses.windows) < 2
    host_only = not analyses.trace.has_gpu

    def spec_of(f: Finding) -> str | None:
        spec = RULE_TRANSFORMS.get(f.id)
        if spec is None or (one_window and spec in NEEDS_NEXT_STEP):
            return None
        return None if host_only and spec in DEVICE_ONLY else spec

    modelled = [f for f in findings if spec_of(f) is not None]
    if not modelled:
        return findings, None
    rp = _replayer(analyses)
    if rp is None:
        return findings, None
    runs = _replays(rp, tuple(dict.fromkeys(
        s for f in modelled if (s := spec_of(f)) is not None)))
    if runs is None:
        return findings, None
    before_us = rp.before.step_ns / 1000.0
    step_us = analyses.breakdown.avg_step_ns / 1000.0 or before_us  # pct_of_step's base

    def replay(specs: tuple[str, ...]) -> WindowReplay:
        # rules sharing a transform (host-sync, sync-memcpy) replay it once
        if specs not in runs:
            runs[specs] = rp.run(tuple(parse(s) for s in specs))
        return runs[specs]

    out: list[Finding] = []
    for f in findings:
        spec = spec_of(f)
        if spec is None:
            out.append(f)
            continue
        after_us = replay((spec,)).after.step_ns / 1000.0
        saving = max(before_us - after_us, 0.0)
        pct = min(100.0 * saving / step_us, 100.0)
        out.append(dataclasses.replace(
            f, saving_us=saving, saving_pct=pct, method="replay", predicted_step_us=after_us,
            estimate=(f"replayed: the steps' dependency graph re-timed with `{spec}` "
                      f"applied predicts {after_us:,.0f} µs per step instead of "
                      f"{before_us:,.0f} µs (docs/whatif.md); the rule's own bound was "
                      f"{f.saving_us:,.0f} µs"),
            severity=f.severity if f.saving_us == 0.0 else severity_for(pct, saving)))
    kept = [f for f in out if f.method == "replay" and f.saving_pct >= min_pct]
    specs = tuple(dict.fromkeys(s for f in kept if (s := spec_of(f)) is not None))
    if not specs:
        return out, None
    both = replay(specs)
    return out, Combined(rp.before, both.after, specs,
                         tuple(dict.fromkeys(f.id for f in kept)), both.touched)
