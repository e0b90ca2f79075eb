"""Savings by replay: a finding whose fix the dependency graph can model (the table in
stepscope.analysis.graph.fixes) gets its saving from re-timing the steps with that fix
applied (``method: "replay"``, the predicted step beside it); the others keep the rule's
own bound (``method: "bound"``). All modelled fixes together give the report's predicted
step (docs/whatif.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from stepscope.advice.finding import Finding, severity_for
from stepscope.analysis.events.links import Links
from stepscope.analysis.graph.fixes import DEVICE_ONLY, NEEDS_NEXT_STEP, RULE_TRANSFORMS
from stepscope.analysis.graph.transforms import parse
from stepscope.analysis.graph.whatif import Replayer, Timing, WindowReplay
from stepscope.analysis.graph.window import Window
from stepscope.analysis.suite import Analyses
from stepscope.forked import Served
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class Combined:
    """The step with every replayable finding's fix applied at once."""

    before: Timing
    after: Timing
    transforms: tuple[str, ...]
    findings: tuple[str, ...]
    touched: tuple[int, ...]


Wanted = tuple[tuple[str, ...], ...]  # the sets of transform specs to replay, one run each
Runs = dict[tuple[str, ...], WindowReplay]


def _replayer(trace: Trace, links: Links, windows: tuple[Window, ...]) -> Replayer | None:
    """The steps' graph with its unmodified replay (``before``) computed."""
    if not windows or (not trace.has_gpu and not len(trace.host)):
        return None
    rp = Replayer(trace, links, list(windows))
    _ = rp.before
    return rp


def _after(rp: Replayer, specs: tuple[str, ...]) -> tuple[Timing, tuple[int, ...]]:
    return rp.after(tuple(parse(s) for s in specs))


def _runs(rp: Replayer | None, wanted: Wanted) -> Runs | None:
    """Each wanted set of fixes replayed; None when there is no graph or the recorded step
    does not replay (no time). One after another in this process: with the native
    longest-path pass a replay costs ~0.15 s at 1 GB, less than a forked child pays in
    copy-on-write faults to start on the graph (dealing three replays out to children
    measured 0.5 s slower on two cores)."""
    if rp is None or rp.before.step_ns <= 0:
        return None
    return {sp: rp.run(tuple(parse(s) for s in sp)) for sp in wanted}


class Replays:
    """The replays of a trace's analysed steps. ``background``: a forked child builds the
    graph and replays the recorded steps as soon as the windows are known, while this
    process runs the other analyses and the rules (at 1 GB: ~1.7 s of CPU that would
    otherwise wait for the rules), then replays what it is asked (stepscope.forked.Served).
    Otherwise the graph is built here on the first question. The answers are the same."""

    def __init__(self, trace: Trace, links: Links, windows: list[Window], *,
                 background: bool = False) -> None:
        self.windows = tuple(windows)
        self._meanwhile: Callable[[], None] | None = None
        frozen = self.windows
        self._served: Served[Replayer | None, Wanted, Runs | None] = Served(
            lambda: _replayer(trace, links, frozen), _runs, enabled=background)

    def meanwhile(self, work: Callable[[], None]) -> None:
        """``work`` to do once, in this process, while it waits for its first answer
        (before computing it, when the replays run here)."""
        self._meanwhile = work

    def runs(self, wanted: Wanted) -> Runs | None:
        work, self._meanwhile = self._meanwhile, None
        return self._served.ask(wanted, meanwhile=work)

    def close(self) -> None:
        self._served.close()


def replay_findings(analyses: Analyses, findings: list[Finding], min_pct: float = 0.0,
                    replays: Replays | None = None) -> tuple[list[Finding], Combined | None]:
    """The findings with replayed savings, and every reported replayed fix applied at once:
    a fix whose own replay saves under ``min_pct`` % of the step is a finding the report
    drops, so it is not among the fixes applied together either. ``replays``: the trace's
    replays started earlier (report.build), used when they are of the analysed windows."""
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
    own = replays is None or replays.windows != analyses.windows
    if own:
        replays = Replays(analyses.trace, analyses.links, list(analyses.windows))
    assert replays is not None
    try:
        return _replayed(analyses, findings, min_pct, replays, spec_of)
    finally:
        if own:
            replays.close()


def _replayed(analyses: Analyses, findings: list[Finding], min_pct: float, replays: Replays,
              spec_of: Callable[[Finding], str | None]
              ) -> tuple[list[Finding], Combined | None]:
    specs = tuple(dict.fromkeys(s for f in findings if (s := spec_of(f)) is not None))
    # each finding's own fix, and (ahead of knowing which findings stay) all of them together
    runs = replays.runs(tuple(dict.fromkeys([*((s,) for s in specs), specs])))
    if runs is None:
        return findings, None
    before = next(iter(runs.values())).before
    before_us = before.step_ns / 1000.0
    step_us = analyses.breakdown.avg_step_ns / 1000.0 or before_us  # pct_of_step's base

    def replay(specs: tuple[str, ...]) -> WindowReplay:
        # rules sharing a transform (host-sync, sync-memcpy) replay it once
        if specs not in runs:
            more = replays.runs((specs,))
            assert more is not None  # the same replays answered before
            runs.update(more)
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
    return out, Combined(before, both.after, specs,
                         tuple(dict.fromkeys(f.id for f in kept)), both.touched)
