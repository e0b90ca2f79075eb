"""Text section "Efficiency": peaks, MFU and the top operators against the roofline."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

ROWS = 8


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.1f} %"


def render_efficiency(console: Console, data: dict[str, Any], width: int = 60) -> None:
    e = data.get("efficiency")
    if not e:
        return
    console.print()
    console.print("[bold]Efficiency[/] (work models from recorded shapes; docs/metrics.md)")
    for d in e["devices"]:
        if d["peak_match"] is None:
            console.print(f"  device {d['device']} {escape(d['name'])}: peak unknown — "
                          f"{escape(d['note'] or '')}")
        else:
            peak = d["peak_tflops"].get(e["mfu_dtype"]) or d["peak_tflops"].get("fp32")
            console.print(f"  device {d['device']} {escape(d['name'])}: {escape(d['peak_match'])}"
                          f" ({d['matched_by']}), {e['mfu_dtype']} peak {peak} TFLOP/s, "
                          f"{d['peak_gbytes_per_s']} GB/s"
                          + (f" — {escape(d['note'])}" if d["note"] else ""))
    console.print(f"  MFU {_pct(e['mfu_pct'])} · HFU {_pct(e['hfu_pct'])} "
                  f"({e['mfu_dtype']}) · {e['total_gflop']:,.4g} GFLOP · "
                  f"{_pct(e['modelled_time_pct'])} of {e['timed_on']} time has a work model")
    rows = [r for r in e["operators"] if r["time_us"] > 0][:ROWS]
    if not rows:
        return
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("operator", overflow="ellipsis", no_wrap=True, max_width=min(width, 36))
    for col in ("dtype", "TFLOP/s", "GB/s", "%peak", "%BW", "bound"):
        table.add_column(col, justify="right", no_wrap=True)

    def num(x: float | None) -> str:
        return "" if x is None else f"{x:.1f}"

    for r in rows:
        table.add_row(escape(r["name"]), r["dtype"], f"{r['tflops_per_s']:.2f}",
                      f"{r['gbytes_per_s']:.0f}", num(r["pct_peak_flops"]),
                      num(r["pct_peak_bandwidth"]), r["bound"] or "")
    console.print(table)
