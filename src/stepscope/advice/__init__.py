"""The advisor: small independent rules over analysis results -> ranked Findings.

Each rule module in ``stepscope.advice.rules`` exposes ``check(ctx) -> Finding | None``.
A rule that raises is skipped (a low-severity ``advisor-error`` finding says so) and
never breaks the report. Findings are sorted by estimated saving per step, largest first.
"""

from __future__ import annotations

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding
from stepscope.advice.rules import RULES
from stepscope.advice.rules import RuleFn as Rule
from stepscope.analysis.suite import Analyses

__all__ = ["RULES", "Finding", "Rule", "advise"]

MIN_SAVING_PCT = 0.5  # findings saving less than this share of the step are dropped


def advise(analyses: Analyses, rules: dict[str, Rule] | None = None) -> list[Finding]:
    ctx = Context(analyses)
    findings: list[Finding] = []
    failed: list[str] = []
    for name, rule in (rules if rules is not None else RULES).items():
        try:
            out = rule(ctx)
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if out is None:
            continue
        # memory findings save no time (saving 0) but carry their own severity
        findings.extend(f for f in (out if isinstance(out, list) else [out])
                        if f.saving_pct >= MIN_SAVING_PCT
                        or (f.saving_us == 0.0 and f.severity != "low"))
    findings.sort(key=lambda f: (-f.saving_us, f.id))
    if failed:
        findings.append(Finding(
            id="advisor-error", title="Some advisor rules could not run on this trace",
            saving_us=0.0, saving_pct=0.0, severity="low",
            estimate="not applicable", evidence=tuple(failed),
            fix="Please report this with the trace; the other findings are unaffected.",
        ))
    return findings
