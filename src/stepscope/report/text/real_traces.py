"""Text lines for what real traces need said: reader notes, warm-up, clock skew,
communication and CUDA/HIP graphs. Nothing is printed when there is nothing to say."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.report.text.layout import hanging
from stepscope.units import count, format_us


def render_real_traces(console: Console, data: dict[str, Any]) -> None:
    for n in data.get("notes") or ():
        hanging(console, "", Text("note: ", style="dim") + Text(n))
    w = data.get("warmup")
    if w:
        hanging(console, "", Text("warm-up: ", style="yellow") + Text(
            f"{format_us(w['duration_us'])} at the start ({w['pct_of_window']:.0f} % of the "
            f"window; {', '.join(w['calls'][:3])}) is excluded from the steady-state figures "
            "below"))
    sk = data.get("clock_skew")
    if sk:
        hanging(console, "", Text("warning: ", style="yellow") + Text(sk["warning"]))
    c = data.get("communication")
    if c:
        hanging(console, "", Text.assemble(
            ("Communication", "bold"),
            f": {c['share_of_kernel_time_pct']:.1f} % of kernel time · exposed "
            f"{format_us(c['exposed_per_step_us'])} per step ({c['exposed_pct_of_step']:.1f} % "
            f"of the step) · overlap {c['overlap_pct']:.0f} %"))
    g = data.get("graphs")
    if g and g["graph_launches"]:
        hanging(console, "", Text.assemble(
            ("Graphs", "bold"),
            f": {count(g['graph_launches'], 'graph launch', 'graph launches')}, "
            f"{g['kernels_per_graph']:,.1f} kernels per graph"))
