"""Text section "Efficiency": peaks, MFU and the top operators against the roofline."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.report.text.layout import (
    MISSING,
    Column,
    fit_table,
    hanging,
    pct_column,
    print_table,
)

ROWS = 8


def _pct(x: float | None) -> str:
    return MISSING if x is None else f"{x:.1f} %"


def render_efficiency(console: Console, data: dict[str, Any]) -> None:
    e = data.get("efficiency")
    if not e:
        return
    console.print()
    console.print("[bold]Efficiency[/] (work models from recorded shapes; docs/metrics.md)")
    dtype = e["mfu_dtype"] or "dtype unknown"
    for d in e["devices"]:
        who = d["name"] or "(no name recorded)"
        if d["peak_match"] is None:
            hanging(console, "  ", Text(f"device {d['device']} {who}: peak unknown — "
                                        f"{d['note'] or ''}"))
        else:
            # the peak MFU divides by (steps[].peak_tflops), not a second pick from the table:
            # a bf16 run on a V100 has no bf16 peak, so no MFU, and shows no fp32 stand-in
            peak = next((s["peak_tflops"] for s in e["steps"] if s["device"] == d["device"]),
                        None)
            hanging(console, "  ", Text(
                f"device {d['device']} {who}: {d['peak_match']} ({d['matched_by']}), "
                f"{dtype} peak {MISSING if peak is None else f'{peak} TFLOP/s'}, "
                f"{d['peak_gbytes_per_s']} GB/s"
                + (f" — {d['note']}" if d["note"] else "")))
    hanging(console, "  ", Text(
        f"MFU {_pct(e['mfu_pct'])} · HFU {_pct(e['hfu_pct'])} ({dtype}) · "
        f"{e['total_gflop']:,.4g} GFLOP · {_pct(e['modelled_time_pct'])} of {e['timed_on']} "
        "time has a work model"))
    rows = [r for r in e["operators"] if r["time_us"] > 0][:ROWS]
    if not rows:
        return
    columns = [
        Column("dtype", [r["dtype"] for r in rows], keep=2),
        Column("TFLOP/s", [f"{r['tflops_per_s']:.2f}" for r in rows], keep=5),
        Column("GB/s", [f"{r['gbytes_per_s']:.0f}" for r in rows], keep=4),
        pct_column("of peak", [r["pct_peak_flops"] for r in rows], keep=6),
        pct_column("of BW", [r["pct_peak_bandwidth"] for r in rows], keep=3),
        Column("bound", [r["bound"] or MISSING for r in rows], keep=1),
    ]
    print_table(console, fit_table(console, "operator", [r["name"] for r in rows], columns))
