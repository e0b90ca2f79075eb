"""The advisor: small independent rules over analysis results -> ranked Findings.

Each rule module in ``stepscope.advice.rules`` exposes ``check(ctx) -> Finding | None``.
A rule that raises is skipped (a low-severity ``advisor-error`` finding says so) and
never breaks the report. Findings are sorted by estimated saving per step, largest first.
"""

from __future__ import annotations

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding
from stepscope.advice.replay import Combined, Replays, replay_findings
from stepscope.advice.rules import RULES
from stepscope.advice.rules import RuleFn as Rule
from stepscope.analysis.graph.fixes import RULE_TRANSFORMS
from stepscope.analysis.suite import Analyses

__all__ = ["CAPTURE_ONLY_REASON", "NEEDS_EXECUTED_WORK", "RULES", "Combined", "Finding", "Replays",
           "Rule",
           "advise", "advise_replayed", "skipped_rules"]

MIN_SAVING_PCT = 0.5  # findings saving less than this share of the step are dropped

# Rules whose premise is device work that executed in the window: they judge the GPU's idle
# time, the cost of launches, host work between kernels, a module's share of the step or the
# FLOP/s achieved. A window that only captures CUDA/HIP graphs (analysis.events.graphs:
# capture_only: stream-capture calls, no graph launch) records the captured launches without
# running them, so the GPU is idle by design and none of these premises holds. The advisor
# skips them there (one check here, not a copy per rule); the report's notes say so.
NEEDS_EXECUTED_WORK: frozenset[str] = frozenset({
    "launch-bound", "gpu-gaps", "gpu-low-utilization", "small-batch", "cpu-ops-in-gpu-job",
    "host-sync", "unfused-optimizer", "dominant-module", "low-mfu", "h2d-not-overlapped",
})
CAPTURE_ONLY_REASON = ("graph capture: the window captures CUDA/HIP graphs and launches none; "
                       "captured launches are recorded, not executed, so the idle GPU is "
                       "expected and findings that judge GPU idle time, launch cost, CPU "
                       "operators between kernels, modules or MFU do not apply ("
                       + ", ".join(sorted(NEEDS_EXECUTED_WORK)) + " not run)")


def skipped_rules(analyses: Analyses) -> frozenset[str]:
    """Rules whose premise the window does not meet (see NEEDS_EXECUTED_WORK)."""
    g = analyses.graphs
    return NEEDS_EXECUTED_WORK if g is not None and g.capture_only else frozenset()


def advise(analyses: Analyses, rules: dict[str, Rule] | None = None, *,
           replay: bool = True) -> list[Finding]:
    return advise_replayed(analyses, rules, replay=replay)[0]


def advise_replayed(analyses: Analyses, rules: dict[str, Rule] | None = None, *,
                    replay: bool = True, replays: Replays | None = None,
                    ) -> tuple[list[Finding], Combined | None]:
    """The findings, their savings replayed where the graph models the fix, and the step
    with every such fix applied together. ``replay=False``: the rules' own bounds only
    (their unit tests check the rules' premises and bounds on their own). ``replays``: the
    steps' replays, started before the analyses (report.build); built here otherwise."""
    ctx = Context(analyses)
    chosen = rules if rules is not None else RULES
    skip = skipped_rules(analyses)
    place = {name: k for k, name in enumerate(chosen)}
    failed: list[tuple[int, str]] = []  # (the rule's place, why)

    def run(names: list[str]) -> list[Finding]:
        found: list[Finding] = []
        for name in names:
            try:
                out = chosen[name](ctx)
            except Exception as exc:
                failed.append((place[name], f"{name}: {type(exc).__name__}: {exc}"))
                continue
            if out is not None:
                found.extend(out if isinstance(out, list) else [out])
        return found

    # The rules whose fixes the replays model run first: their findings are all that the
    # replays need, so the other rules run while the replays do (replay_findings'
    # meanwhile: at 1 GB the replay child's ~0.3 s beside ~0.3 s of rules here). The
    # findings are sorted below, so the order the rules ran in changes nothing.
    names = [n for n in chosen if n not in skip]
    modelled = run([n for n in names if n in RULE_TRANSFORMS])
    rest = [n for n in names if n not in RULE_TRANSFORMS]
    others: list[Finding] = []

    def run_rest() -> None:
        others.extend(run(rest))
        rest.clear()

    combined = None
    replay_error: list[str] = []
    try:
        if replay:
            modelled, combined = replay_findings(analyses, modelled, MIN_SAVING_PCT, replays,
                                                 meanwhile=run_rest)
    except Exception as exc:  # the bounds stand; the report says why
        replay_error.append(f"replay: {type(exc).__name__}: {exc}")
    run_rest()  # unless they ran while the replays did
    findings = [*modelled, *others]
    failed_why = [why for _, why in sorted(failed)] + replay_error
    # memory findings save no time (saving 0) but carry their own severity
    findings = [f for f in findings if f.saving_pct >= MIN_SAVING_PCT
                or (f.saving_us == 0.0 and f.severity != "low")]
    findings.sort(key=lambda f: (-f.saving_us, f.id))
    if failed_why:
        findings.append(Finding(
            id="advisor-error", title="Some advisor rules could not run on this trace",
            saving_us=0.0, saving_pct=0.0, severity="low",
            estimate="not applicable", evidence=tuple(failed_why),
            fix="Please report this with the trace; the other findings are unaffected.",
        ))
    return findings, combined
