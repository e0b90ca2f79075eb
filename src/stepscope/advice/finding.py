"""A Finding: one problem, what it costs per step, the evidence, and the change to make."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("high", "medium", "low")
# Severity weighs both the share of the step and the absolute saving per step: a large share
# of a tiny step is not worth an engineer's day. The floors are in the units a trace can
# resolve: Kineto timestamps were whole µs before PyTorch 2.x (ns fractions since), and one
# kernel launch costs the CPU about 5-10 µs, so a saving under 10 µs per step is at the level
# of one launch or of the clock; 100 µs is an order above (tens of launches). Documented in
# docs/advice.md.
HIGH_PCT = 10.0  # saving >= 10 % of the step ...
HIGH_FLOOR_US = 100.0  # ... and >= 100 µs per step
MEDIUM_PCT = 3.0  # saving >= 3 % of the step ...
MEDIUM_FLOOR_US = 10.0  # ... and >= 10 µs per step


def severity_for(saving_pct: float, saving_us: float) -> str:
    """The one place severity is decided (findings that save no time set their own)."""
    if saving_pct >= HIGH_PCT and saving_us >= HIGH_FLOOR_US:
        return "high"
    if saving_pct >= MEDIUM_PCT and saving_us >= MEDIUM_FLOOR_US:
        return "medium"
    return "low"


@dataclass(frozen=True)
class Finding:
    """One advisor result. Savings are per (average) step: a replay of the trace's
    dependency graph with the fix applied (``method`` "replay", ``predicted_step_us`` the
    replayed step), or the rule's upper bound where the graph cannot model the fix
    ("bound")."""

    id: str
    title: str
    saving_us: float
    saving_pct: float
    estimate: str  # one sentence: how the saving was estimated
    evidence: tuple[str, ...]
    fix: str
    code: str | None = None
    source_lines: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    severity: str = field(default="")
    method: str = "bound"  # "replay" | "bound" (docs/whatif.md)
    predicted_step_us: float | None = None  # the replayed step with this fix applied

    def __post_init__(self) -> None:
        if not self.severity:
            object.__setattr__(self, "severity", severity_for(self.saving_pct, self.saving_us))
        if self.severity not in SEVERITIES:
            raise ValueError(f"bad severity {self.severity!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "severity": self.severity,
            "estimated_saving": {"us_per_step": round(float(self.saving_us), 3),
                                 "pct_of_step": round(float(self.saving_pct), 2),
                                 "how": self.estimate,
                                 "method": self.method,
                                 "predicted_step_us": None if self.predicted_step_us is None
                                 else round(float(self.predicted_step_us), 3)},
            "evidence": list(self.evidence),
            "source_lines": list(self.source_lines),
            "fix": {"text": self.fix, "code": self.code},
            "references": list(self.references),
        }
