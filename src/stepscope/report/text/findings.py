"""The findings section of the terminal report: one block per finding, wrapped to the
width; then the findings' fixes replayed together and the critical path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.advice.finding import Finding
from stepscope.report.text.layout import code_block, hanging
from stepscope.shortnames import short_name
from stepscope.units import count, format_us

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


# What bounds the step and what the findings' fixes do to it together (issue 22): the
# critical path and the replays, read from their JSON so the report and `stepscope whatif`
# print the same.

NAME_CHARS = 90  # kernel names run to hundreds of characters: the JSON has them whole
LABELS = {"cpu": "CPU", "gpu_compute": "GPU compute", "launch_overhead": "launch overhead",
          "kernel_to_kernel": "kernel-to-kernel", "sync": "synchronisation",
          "communication": "communication", "data_loading": "data loading",
          "other": "before the path"}


def render_critical(console: Console, cp: dict[str, Any] | None) -> None:
    if not cp or not cp.get("windows"):
        return
    console.print()
    head = Text("Critical path", style="bold")
    head.append(f" (longest dependency chain, HTA's definition; mean of {cp['windows']} "
                f"window{'s' if cp['windows'] != 1 else ''}): ")
    head.append(format_us(cp["length_us"]), style="bold")
    head.append(f" of {format_us(cp['window_us'])}")
    hanging(console, "", head)
    shares = sorted(((v, k) for k, v in cp["bound_by_pct"].items() if v >= 0.05), reverse=True)
    hanging(console, "  ", Text("bound by: " + ", ".join(f"{LABELS[k]} {v:.1f} %"
                                                         for v, k in shares)))
    for e in cp["top_events"][:5]:
        name = short_name(e["name"], NAME_CHARS)
        hanging(console, "  • ", Text(f"{format_us(e['on_path_us'])} {name} "
                                      f"({LABELS.get(e['category'], e['category'])})"))


def _row(by: dict[str, float], key: str) -> str:
    return format_us(by.get(key, 0.0))


def render_whatif(doc: dict[str, Any] | None, console: Console, *,
                  title: str = "What if", section: bool = True) -> None:
    """The replay's before → after; ``section``: a blank line first, as a section of the
    report (the ``whatif`` command prints it alone, from the first line)."""
    if not doc:
        return
    b, a = doc["before"], doc["after"]
    if section:
        console.print()
    head = Text(title, style="bold")
    head.append(" (replayed step, docs/whatif.md): ")
    head.append(f"{format_us(b['step_us'])} → ", style="")
    head.append(format_us(a["step_us"]), style="bold")
    head.append(f" per step ({doc['saving_pct']:.1f} % saved)")
    hanging(console, "", head)
    applied = ", ".join(f"{x.get('apply', x['transform'])} ({count(int(x['events']), 'event')})"
                        for x in doc["applied"])
    hanging(console, "  ", Text("applied: " + applied, style="dim"))
    if "slowest_rank" in b:  # a run of ranks: every rank replayed, the slowest is the step
        ranks = "; ".join(f"rank {x['rank']} {format_us(x['step_us'])} → {format_us(y['step_us'])}"
                          for x, y in zip(b["ranks"], a["ranks"], strict=True))
        hanging(console, "  ", Text(f"slowest rank {b['slowest_rank']} → {a['slowest_rank']}; "
                                    + ranks, style="dim"))
    if doc.get("note"):
        hanging(console, "  ", Text("note: " + doc["note"], style="dim"))
    console.print("  time on the critical path, per step:", style="dim", highlight=False)
    width = max(len(v) for v in LABELS.values())
    for key, label in LABELS.items():
        before, after = b["by_category_us"].get(key, 0.0), a["by_category_us"].get(key, 0.0)
        if before == 0 and after == 0:
            continue
        console.print(f"  {label:<{width}}  {_row(b['by_category_us'], key):>12}"
                      f"  → {_row(a['by_category_us'], key):>12}", highlight=False)
