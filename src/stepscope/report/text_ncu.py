"""Terminal section for Nsight Compute kernels (``--ncu`` or an ncu CSV on its own)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _pct(x: float | None) -> str:
    return "" if x is None else f"{x:.0f} %"


def render_ncu(data: dict[str, Any] | None, console: Console, top: int) -> None:
    if not data:
        return
    kernels = data["kernels"]
    console.print()
    console.print(f"[bold]Nsight Compute[/] ({escape(data['page'])} page): {len(kernels)} "
                  f"kernel launch(es), {data['matched']} matched to the trace")
    width = max(16, console.width - 66)
    table = Table(show_edge=False, box=None, pad_edge=False)
    for col in ("SM", "memory", "DRAM", "occ. ach/theo", "limiter", "speedup"):
        table.add_column(col, justify="right", no_wrap=True)
    table.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=width)
    for k in kernels[:top]:
        occ = f"{_pct(k['achieved_occupancy_pct'])}/{_pct(k['theoretical_occupancy_pct'])}"
        best = k["best_speedup_pct"]
        table.add_row(_pct(k["sm_throughput_pct"]), _pct(k["memory_throughput_pct"]),
                      _pct(k["dram_throughput_pct"]), occ, escape(k["occupancy_limiter"] or ""),
                      "" if best is None else f"≤{best:.0f} %", escape(k["name"]))
    console.print(table)
    for k in kernels[:top]:
        opt = [r for r in k["rules"] if r["estimated_speedup_pct"]]
        opt.sort(key=lambda r: -r["estimated_speedup_pct"])
        for r in opt[:3]:
            console.print(f"  [dim]{escape(k['name'][:40])}[/] {escape(r['name'])} "
                          f"(≤{r['estimated_speedup_pct']:.0f} %): "
                          f"{escape(r['description'][:160])}")
