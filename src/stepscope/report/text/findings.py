"""The findings section of the terminal report: one block per finding, wrapped to the width."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from stepscope.advice.finding import Finding
from stepscope.report.text.layout import code_block, hanging
from stepscope.units import format_us

SEVERITY_STYLE = {"high": "bold red", "medium": "bold yellow", "low": "bold cyan"}


def render_findings(console: Console, findings: Sequence[Finding], *,
                    unit: str = "step", skipped: int = 0) -> None:
    """``unit``: what a saving is per — a training step, or one TensorRT inference;
    ``skipped``: rules the window's premises ruled out (the notes above say why)."""
    console.print()
    if not findings:
        why = (f"none — {skipped} rules do not apply to this window (see the note above) and "
               "no other rule found a problem worth fixing." if skipped else
               "none — no rule found a problem worth fixing.")
        hanging(console, "", Text.assemble(("Findings", "bold"), f": {why}"))
        return
    head = Text("Findings", style="bold")
    head.append(f" ranked by estimated saving per {unit}", style="")
    if len(findings) > 1:
        head.append("; each saving is one fix on its own (replayed, or an upper bound), so "
                    "they do not add up: the fixes together are below", style="")
    hanging(console, "", head)
    for i, finding in enumerate(findings, 1):
        render_finding(console, finding, i, unit=unit)


def render_finding(console: Console, f: Finding, index: int, *, unit: str = "step") -> None:
    console.print()
    title = Text()
    title.append(f"[{f.severity.upper()}]", style=SEVERITY_STYLE[f.severity])
    title.append(" ")
    title.append(f.title, style="bold")
    hanging(console, f"{index}. ", title)
    replayed = f.method == "replay" and f.predicted_step_us is not None
    saving = Text("saves " if replayed else "saves up to ")
    saving.append(format_us(f.saving_us), style="bold")
    saving.append(f" per {unit} ({f.saving_pct:.1f} % of the {unit}")
    if replayed:
        saving.append(f"; replayed step {format_us(f.predicted_step_us or 0.0)}")
    else:
        saving.append("; an upper bound: the replay cannot model this fix")
    saving.append(") · ")
    saving.append(f.id, style="dim")
    hanging(console, "   ", saving)
    hanging(console, "   ", Text("estimate: " + f.estimate, style="dim"))
    for line in f.evidence:
        hanging(console, "   • ", Text(line))
    if f.source_lines:
        console.print("   [bold]source lines[/] (from with_stack):")
        for line in f.source_lines:
            hanging(console, "     ", Text(line))
    fix = Text("fix: ", style="bold green")
    fix.append(f.fix)
    hanging(console, "   ", fix)
    if f.code:
        code_block(console, f.code, 5)
    for ref in f.references:
        # URLs stay whole (soft wrap) so terminals keep them clickable.
        console.print(Text("   see ", style="dim") + Text(ref, style="dim"), soft_wrap=True)
