"""Text rendering of a run's distributed view (stepscope report DIR)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from stepscope.report.run import RunReport


def _ms(us: float) -> str:
    return f"{us / 1000.0:,.2f}"


def render_run_text(report: RunReport, console: Console | None = None, top: int = 15) -> None:
    console = console or Console()
    data = report.to_json()
    d: dict[str, Any] = data["distributed"]
    console.rule(Text(f"stepscope report — {report.run.location}", style="bold"))
    console.print(f"{d['world_size']} ranks · backend {escape(str(d['backend'] or 'unknown'))} · "
                  f"ranks from {d['rank_source']}")
    for err in d["failed"]:
        console.print(f"[yellow]skipped rank:[/] {escape(err)}")
    console.print()
    if report.findings:
        console.print("[bold]Findings[/] (ranked by estimated saving per step)")
        for i, f in enumerate(report.findings, 1):
            f.render_text(console, i)
    else:
        console.print("[bold]Findings[/]: none — no multi-rank rule found a problem.")
    table = Table(title="Per rank (ms, all steps)", title_justify="left")
    for col in ("rank", "computation", "overlap", "communication", "other", "sync wait",
                "transfer", "overlap %"):
        table.add_column(col, justify="right")
    for r in d["ranks"][:top] if len(d["ranks"]) > 2 * top else d["ranks"]:
        table.add_row(str(r["rank"]), _ms(r["computation_us"]), _ms(r["overlap_us"]),
                      _ms(r["communication_us"]), _ms(r["other_us"]), _ms(r["sync_us"]),
                      _ms(r["transfer_us"]),
                      "-" if r["comm_overlap_pct"] is None else f"{r['comm_overlap_pct']:.1f}")
    console.print()
    console.print(table)
    if d["stragglers"]:
        st = Table(title="Stragglers (slowest first)", title_justify="left")
        for col in ("rank", "wait caused ms", "share %", "last at", "compute excess ms"):
            st.add_column(col, justify="right")
        for s in d["stragglers"][:top]:
            st.add_row(str(s["rank"]), _ms(s["wait_caused_us"]), f"{s['share_pct']:.1f}",
                       f"{s['last_arrivals']}/{s['matched_calls']}",
                       _ms(s["computation_excess_us"]))
        console.print(st)
    if d["steps"]:
        pt = Table(title="Per step: who made the others wait", title_justify="left")
        for col in ("step", "last rank", "others waited ms"):
            pt.add_column(col, justify="right")
        for s in d["steps"][:top]:
            pt.add_row(escape(s["step"] or "-"), str(s["last_rank"]), _ms(s["wait_us"]))
        console.print(pt)
    if d["collectives"]:
        ct = Table(title="Collectives", title_justify="left")
        for col in ("collective", "group", "calls", "bytes/call", "time ms", "transfer ms",
                    "algbw GB/s", "busbw GB/s"):
            ct.add_column(col, justify="right")
        for c in d["collectives"][:top]:
            ct.add_row(escape(c["collective"]), escape(c["process_group"] or "-"), str(c["calls"]),
                       "-" if c["bytes_per_call"] is None else f"{c['bytes_per_call']:,.0f}",
                       _ms(c["time_us"]), _ms(c["transfer_us"]),
                       "-" if c["algbw_gbps"] is None else f"{c['algbw_gbps']:.3f}",
                       "-" if c["busbw_gbps"] is None else f"{c['busbw_gbps']:.3f}")
        console.print(ct)


def render_rank_part(console: Console, data: dict[str, Any]) -> None:
    """Single trace of a distributed job: this rank's communication split (no-op otherwise)."""
    part = data.get("distributed")
    if not part:
        return
    overlap = part["comm_overlap_pct"]
    console.print()
    console.print(
        f"[bold]Distributed[/] (rank {part['rank']} of {part['world_size']}, "
        f"{escape(str(part['backend']))}): computation {_ms(part['computation_us'])} ms · "
        f"overlap {_ms(part['overlap_us'])} ms · communication {_ms(part['communication_us'])} "
        f"ms · other {_ms(part['other_us'])} ms · comm/compute overlap "
        f"{'-' if overlap is None else f'{overlap:.1f} %'} · {part['calls']} collective calls; "
        "report the run's folder for stragglers and sync/transfer"
    )
