"""The TensorRT advisor: rules over a TrtAnalysis -> ranked Findings (docs/advice.md)."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules import TRT_RULES, TrtRuleFn
from stepscope.advice.rules.tensorrt.context import TrtContext
from stepscope.analysis.tensorrt.engine import TrtAnalysis


def advise_tensorrt(a: TrtAnalysis, rules: dict[str, TrtRuleFn] | None = None) -> list[Finding]:
    ctx = TrtContext(a)
    findings: list[Finding] = []
    failed: list[str] = []
    for name, rule in (rules if rules is not None else TRT_RULES).items():
        try:
            out = rule(ctx)
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
            continue
        if out is not None:
            findings.append(out)
    findings.sort(key=lambda f: (-f.saving_us, f.id))
    if failed:
        findings.append(
            Finding(
                id="advisor-error",
                title="Some advisor rules could not run on this engine",
                saving_us=0.0,
                saving_pct=0.0,
                severity="low",
                estimate="not applicable",
                evidence=tuple(failed),
                fix=(
                    "Please report this with the trtexec outputs; "
                    "the other findings are unaffected."
                ),
            )
        )
    return findings
