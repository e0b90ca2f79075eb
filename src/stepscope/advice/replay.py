"""Savings by replay: a finding whose fix the dependency graph can model (the table in
stepscope.analysis.graph.fixes) gets its saving from re-timing the steps with that fix
applied (``method: "replay"``, the predicted step beside it); the others keep the rule's
own bound (``method: "bound"``). All modelled fixes together give the report's predicted
step (docs/whatif.md)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import cast

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


@dataclass
class _Replaying:
    """The steps' graph with its unmodified replay computed (None: no graph), the sets of
    fixes replayed so far, and the work aside once done (``Replays``' ``aside``)."""

    replayer: Replayer | None
    done: Runs = field(default_factory=dict)
    aside: list[object] = field(default_factory=list)  # [value] once done (None: failed)

    def replays(self) -> bool:
        """Whether the recorded steps replay (a graph, and a step of some time)."""
        return self.replayer is not None and self.replayer.before.step_ns > 0


def _replaying(trace: Trace, links: Links, windows: tuple[Window, ...]) -> _Replaying:
    if not windows or (not trace.has_gpu and not len(trace.host)):
        return _Replaying(None)
    rp = Replayer(trace, links, list(windows))
    _ = rp.before
    return _Replaying(rp)


ASIDE = "aside"  # the question for the work aside's value (any other is a Wanted)
Question = Wanted | str


def _answer(state: _Replaying, question: Question) -> Runs | object:
    """The asked runs, or (ASIDE) the work aside's value when it was done ahead, None
    otherwise: the caller then does that work itself, while the child replays."""
    if isinstance(question, str):
        return state.aside[0] if state.aside else None
    return _runs(state, question)


def _runs(state: _Replaying, wanted: Wanted) -> Runs | None:
    """Each wanted set of fixes replayed (a set asked again is taken from before); None
    when the recorded steps do not replay. One after another in this process: with the native
    longest-path pass a replay costs ~0.15 s at 1 GB, less than a forked child pays in
    copy-on-write faults to start on the graph (dealing three replays out to children
    measured 0.5 s slower on two cores)."""
    rp = state.replayer
    if rp is None or not state.replays():
        return None
    for sp in wanted:
        if sp not in state.done:
            state.done[sp] = rp.run(tuple(parse(s) for s in sp))
    return {sp: state.done[sp] for sp in wanted}


def _aside(work: Callable[[], object] | None) -> Callable[[_Replaying], Iterator[None]]:
    """The work aside as the child's idle step, once its graph is built (a failure is left
    to the caller, who then does it and meets the error where it reads the value)."""

    def steps(state: _Replaying) -> Iterator[None]:
        if work is None:
            return
        yield  # a question that came first goes first
        try:
            state.aside.append(work())
        except Exception:
            state.aside.append(None)
    return steps


def modelled(spec: str | None, windows: int, has_gpu: bool) -> str | None:
    """``spec`` when a replay of these windows can model it, else None: a fix whose gain
    is the next step starting earlier needs two steps (NEEDS_NEXT_STEP), and device-side
    fixes need device work (DEVICE_ONLY)."""
    if spec is None or (windows < 2 and spec in NEEDS_NEXT_STEP):
        return None
    return None if not has_gpu and spec in DEVICE_ONLY else spec


class Replays:
    """The replays of a trace's analysed steps. ``background``: a forked child builds the
    graph and replays the recorded steps as soon as the windows are known, while this
    process runs the other analyses and the rules (at 1 GB: ~1.7 s of CPU that would
    otherwise wait for the rules), then replays what it is asked (stepscope.forked.Served).
    Otherwise the graph is built here on the first question. The answers are the same.
    (Replaying each modelled fix alone ahead, while the rules ran, was measured slower once
    the rules that need no replay ran beside the replays: advise_replayed.)

    ``aside``: other work on the trace for that child once its graph is built (the
    report's derived tables: the child is otherwise idle while the caller's analyses and
    rules run); the caller's meanwhile work gets its value if it was done there."""

    def __init__(self, trace: Trace, links: Links, windows: list[Window], *,
                 background: bool = False, aside: Callable[[], object] | None = None,
                 ) -> None:
        self.windows = tuple(windows)
        self._meanwhile: Callable[[object], None] | None = None
        frozen = self.windows
        self._served: Served[_Replaying, Question, Runs | object] = Served(
            lambda: _replaying(trace, links, frozen), _answer, enabled=background,
            idle=_aside(aside))

    def meanwhile(self, work: Callable[[object], None]) -> None:
        """``work`` to do once, in this process, while it waits for its first runs (before
        computing them, when the replays run here). It gets the work aside's value when the
        child did it ahead, None otherwise (then ``work`` does it itself)."""
        self._meanwhile = work

    def runs(self, wanted: Wanted, meanwhile: Callable[[], None] | None = None,
             ) -> Runs | None:
        """The runs of ``wanted``; ``meanwhile``: more work for this process while the
        child replays (after the work set by :meth:`meanwhile`, on the first runs)."""
        work, self._meanwhile = self._meanwhile, None
        done = self._served.ask(ASIDE) if work is not None else None  # at once, past its graph

        def both() -> None:
            if work is not None:
                work(done)
            if meanwhile is not None:
                meanwhile()

        return cast("Runs | None", self._served.ask(wanted, meanwhile=both))

    def settle(self) -> None:
        """The meanwhile work, now, if no runs were asked (no finding to replay), without
        asking the child: it may still be building its graph, which nothing needs now."""
        work, self._meanwhile = self._meanwhile, None
        if work is not None:
            work(None)

    def close(self) -> None:
        self._served.close()


def replay_findings(analyses: Analyses, findings: list[Finding], min_pct: float = 0.0,
                    replays: Replays | None = None, meanwhile: Callable[[], None] | None = None,
                    ) -> tuple[list[Finding], Combined | None]:
    """The findings with replayed savings, and every reported replayed fix applied at once:
    a fix whose own replay saves under ``min_pct`` % of the step is a finding the report
    drops, so it is not among the fixes applied together either. ``replays``: the trace's
    replays started earlier (report.build), used when they are of the analysed windows.
    ``meanwhile``: this process's work while the replays run (run here first when they
    run here; not run at all when nothing is to be replayed: the caller checks)."""
    windows, has_gpu = len(analyses.windows), analyses.trace.has_gpu

    def spec_of(f: Finding) -> str | None:
        return modelled(RULE_TRANSFORMS.get(f.id), windows, has_gpu)

    if not any(spec_of(f) is not None for f in findings):
        return findings, None
    own = replays is None or replays.windows != analyses.windows
    if own:
        replays = Replays(analyses.trace, analyses.links, list(analyses.windows))
    assert replays is not None
    try:
        return _replayed(analyses, findings, min_pct, replays, spec_of, meanwhile)
    finally:
        if own:
            replays.close()


def _replayed(analyses: Analyses, findings: list[Finding], min_pct: float, replays: Replays,
              spec_of: Callable[[Finding], str | None],
              meanwhile: Callable[[], None] | None = None,
              ) -> tuple[list[Finding], Combined | None]:
    specs = tuple(dict.fromkeys(s for f in findings if (s := spec_of(f)) is not None))
    # each finding's own fix, and (ahead of knowing which findings stay) all of them together
    runs = replays.runs(tuple(dict.fromkeys([*((s,) for s in specs), specs])), meanwhile)
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
