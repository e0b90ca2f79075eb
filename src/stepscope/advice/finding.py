"""A Finding: one problem, what it costs per step, the evidence, and the change to make."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

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

    def render_text(self, console: Console, index: int) -> None:
        colour = {"high": "red", "medium": "yellow", "low": "cyan"}[self.severity]
        console.print(
            f"\n[bold]{index}. {escape(self.title)}[/] [{colour}]{self.severity}[/] · "
            f"saves up to [bold]{fmt_us(self.saving_us)}[/] per step "
            f"({self.saving_pct:.1f} % of the step) [dim]\\[{escape(self.id)}][/]"
        )
        console.print(f"   [dim]estimate: {escape(self.estimate)}[/]")
        for line in self.evidence:
            console.print(f"   • {escape(line)}")
        if self.source_lines:
            console.print("   [bold]source lines[/] (from with_stack):")
            for line in self.source_lines:
                console.print(f"     {escape(line)}")
        console.print(f"   [bold green]fix:[/] {escape(self.fix)}")
        if self.code:
            console.print(Syntax(self.code, "python", theme="ansi_dark", padding=(0, 0, 0, 5),
                                 background_color="default"))
        for ref in self.references:
            console.print(f"   [dim]see {escape(ref)}[/]")


def fmt_us(us: float) -> str:
    return f"{us / 1000.0:,.2f} ms" if us >= 1000 else f"{us:,.1f} µs"
