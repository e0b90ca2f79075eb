"""Terminal section for Nsight Compute kernels (``--ncu`` or an ncu CSV on its own)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.report.text.layout import (
    MISSING,
    Column,
    fit_table,
    hanging,
    pct_column,
    print_table,
    say,
    short_name,
    text_column,
)
from stepscope.shortnames import clip_end
from stepscope.units import count

KERNEL_NAME = 28  # narrow terminals drop the limiter and DRAM before the kernel's name
RULE_TEXT = 160  # characters of a rule's description; the JSON report has all of it


def render_ncu(data: dict[str, Any] | None, console: Console, top: int) -> None:
    if not data:
        return
    kernels = data["kernels"]
    console.print()
    launches = count(len(kernels), "kernel launch", "kernel launches")
    matched = ("" if data["matched"] is None  # ncu alone: no trace to match them to
               else f", {data['matched']} matched to the trace")
    say(console, f"[bold]Nsight Compute[/] ({escape(data['page'])} page): {launches}{matched}")
    shown = kernels[:top]
    if not shown:
        return
    best = [k["best_speedup_pct"] for k in shown]
    columns = [
        pct_column("SM", [k["sm_throughput_pct"] for k in shown], keep=7, digits=0),
        pct_column("memory", [k["memory_throughput_pct"] for k in shown], keep=6, digits=0),
        pct_column("DRAM", [k["dram_throughput_pct"] for k in shown], keep=3, digits=0),
        pct_column("occ. achieved", [k["achieved_occupancy_pct"] for k in shown], keep=4,
                   digits=0),
        pct_column("occ. theoretical", [k["theoretical_occupancy_pct"] for k in shown],
                   keep=1, digits=0),
        text_column("limiter", [k["occupancy_limiter"] for k in shown], keep=2),
        Column("speedup (%)", [MISSING if b is None else f"≤{b:.0f}" for b in best], keep=5),
    ]
    print_table(console, fit_table(console, "kernel", [k["name"] for k in shown], columns,
                                   min_name=KERNEL_NAME))
    for k in shown:
        opt = [r for r in k["rules"] if r["estimated_speedup_pct"]]
        opt.sort(key=lambda r: -r["estimated_speedup_pct"])
        for r in opt[:3]:
            desc = clip_end(r["description"], RULE_TEXT)
            line = Text(short_name(k["name"], 40), style="dim")
            line.append(f" {r['name']} (≤{r['estimated_speedup_pct']:.0f} %): {desc}")
            hanging(console, "  ", line, extra=2)
