"""A Finding: one problem, what it costs per step, the evidence, and the change to make."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("high", "medium", "low")
HIGH_PCT = 10.0  # saving >= 10 % of the step
MEDIUM_PCT = 3.0


def severity_for(saving_pct: float) -> str:
    if saving_pct >= HIGH_PCT:
        return "high"
    if saving_pct >= MEDIUM_PCT:
        return "medium"
    return "low"


@dataclass(frozen=True)
class Finding:
    """One advisor result. Savings are per (average) step and are upper bounds."""

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

    def __post_init__(self) -> None:
        if not self.severity:
            object.__setattr__(self, "severity", severity_for(self.saving_pct))
        if self.severity not in SEVERITIES:
            raise ValueError(f"bad severity {self.severity!r}")

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "title": self.title, "severity": self.severity,
            "estimated_saving": {"us_per_step": round(float(self.saving_us), 3),
                                 "pct_of_step": round(float(self.saving_pct), 2),
                                 "how": self.estimate},
            "evidence": list(self.evidence),
            "source_lines": list(self.source_lines),
            "fix": {"text": self.fix, "code": self.code},
            "references": list(self.references),
        }
