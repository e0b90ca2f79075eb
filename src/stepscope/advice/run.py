"""The advisor for a run of many ranks: the multi-rank rules, ranked by saving."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules import RUN_RULES, RunRuleFn
from stepscope.analysis.distributed.run import Distributed


def advise_run(dist: Distributed, rules: dict[str, RunRuleFn] | None = None) -> list[Finding]:
    findings: list[Finding] = []
    for rule in (rules if rules is not None else RUN_RULES).values():
        out = rule(dist)
        if out is not None:
            findings.append(out)
    findings.sort(key=lambda f: (-f.saving_us, f.id))
    return findings
