"""Text lines for the issue-9 results: reader notes, warm-up, clock skew, communication, graphs."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape


def _us(us: float) -> str:
    return f"{us / 1000.0:,.2f} ms" if us >= 1000 else f"{us:,.1f} µs"


def render_real_traces(console: Console, data: dict[str, Any]) -> None:
    """A few additive lines after the header; nothing when there is nothing to say."""
    for n in data.get("notes") or ():
        console.print(f"[dim]note:[/] {escape(n)}")
    w = data.get("warmup")
    if w:
        console.print(
            f"[yellow]warm-up:[/] {_us(w['duration_us'])} at the start "
            f"({w['pct_of_window']:.0f} % of the window; {escape(', '.join(w['calls'][:3]))}) "
            "is excluded from the steady-state figures below"
        )
    sk = data.get("clock_skew")
    if sk:
        console.print(f"[yellow]warning:[/] {escape(sk['warning'])}")
    c = data.get("communication")
    if c:
        console.print(
            f"[bold]Communication[/]: {c['share_of_kernel_time_pct']:.1f} % of kernel time · "
            f"exposed {_us(c['exposed_per_step_us'])} per step "
            f"({c['exposed_pct_of_step']:.1f} % of the step) · overlap {c['overlap_pct']:.0f} %"
        )
    g = data.get("graphs")
    if g and g["graph_launches"]:
        console.print(
            f"[bold]Graphs[/]: {g['graph_launches']:,} graph launches, "
            f"{g['kernels_per_graph']:,.1f} kernels per graph"
        )
