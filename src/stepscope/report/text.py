"""Terminal report (rich): findings first, then the numbers that back them."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from stepscope.analysis.breakdown import CATEGORIES
from stepscope.report.build import Report
from stepscope.report.text_distributed import render_rank_part

LABELS = {
    "kernel": "Kernel",
    "memcpy": "Memcpy",
    "memset": "Memset",
    "communication": "Communication",
    "runtime": "Runtime",
    "dataloader": "DataLoader",
    "cpu_exec": "CPU exec",
    "other": "Other",
}
NAME_WIDTH = 70


def format_us(us: float) -> str:
    """µs as the reports show them: '89.0 µs', '1.92 ms' (shared with the capture tables)."""
    return f"{us / 1000.0:,.2f} ms" if us >= 1000 else f"{us:,.1f} µs"


def _strip_params(name: str) -> str:
    """Drop a trailing C++ parameter list: 'f<T>(int, float)' -> 'f<T>'."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i] if i > 0 else name
    return name


def _collapse_templates(name: str, keep: int = 1) -> str:
    """Elide template arguments nested deeper than ``keep``: 'a<b<c>, d>' -> 'a<b<…>, d>'."""
    out = []
    depth = 0
    for ch in name:
        if ch == "<":
            if depth == keep:
                out.append("<…")
            elif depth < keep:
                out.append(ch)
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
            if depth <= keep:
                out.append(">")
        elif depth <= keep:
            out.append(ch)
    return "".join(out).replace("::(anonymous namespace)::", "::")


def _short(name: str, width: int = NAME_WIDTH) -> str:
    """Readable one-line name: kernels lose 'void ', parameters, then template arguments."""
    if len(name) <= width:
        return name
    short = _strip_params(name.removeprefix("void "))
    if len(short) > width:
        short = _collapse_templates(short)
    return short if len(short) <= width else short[: width - 1] + "…"


def render_text(report: Report, console: Console | None = None) -> None:
    console = console or Console()
    data = report.to_json()
    src = data["source"]
    title = f"stepscope report — {escape(src['path'])}"
    console.rule(Text(title, style="bold"))
    devices = (
        ", ".join(f"GPU {d['id']}: {escape(d['name'])}" for d in data["devices"]) or "CPU only"
    )
    rank = f" · rank {src['rank']}" if src["rank"] is not None else ""
    console.print(f"{src['events']:,} events · {src['vendor']} · {devices}{rank}")
    for w in src["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    if src["skipped"]:
        parts = ", ".join(f"{n:,} {escape(reason)}" for reason, n in src["skipped"].items())
        console.print(f"[yellow]partial:[/] skipped {parts}")
    _findings(console, report)
    _breakdown(console, data)
    _gpu(console, data)
    _operators(console, data)
    _kernels(console, data)
    _temporal(console, data)
    render_rank_part(console, data)


def _findings(console: Console, report: Report) -> None:
    console.print()
    if not report.findings:
        console.print("[bold]Findings[/]: none — no rule found a problem worth fixing.")
        return
    console.print("[bold]Findings[/] (ranked by estimated saving per step)")
    for i, f in enumerate(report.findings, 1):
        f.render_text(console, i)


def _breakdown(console: Console, data: dict[str, Any]) -> None:
    bd = data["breakdown"]
    steps = data["steps"]
    console.print()
    what = f"{len(steps)} step(s)" if data["profiler_steps"] else "whole trace (no ProfilerStep)"
    console.print(f"[bold]Step time[/]: {format_us(bd['step_avg_us'])} on average over {what}")
    if data["steps_dropped"]:
        console.print(f"  dropped incomplete trailing step(s): {', '.join(data['steps_dropped'])}")
    table = Table(show_edge=False, pad_edge=False, box=None)
    table.add_column("category")
    table.add_column("avg per step", justify="right")
    table.add_column("share", justify="right")
    table.add_column("")
    device_categories = ("kernel", "memcpy", "memset", "communication", "runtime")
    cpu_only = not data["gpu"] and all(bd["avg_us"][c] == 0 for c in device_categories)
    for c in CATEGORIES:
        pct = bd["pct"][c]
        if bd["avg_us"][c] == 0 and (cpu_only or c in ("communication", "memset", "memcpy")):
            continue
        bar = "█" * round(pct / 4)
        table.add_row(LABELS[c], format_us(bd["avg_us"][c]), f"{pct:5.1f} %", f"[cyan]{bar}[/]")
    console.print(table)


def _gpu(console: Console, data: dict[str, Any]) -> None:
    if not data["gpu"]:
        return
    console.print()
    table = Table(title=None, show_edge=False, box=None, pad_edge=False)
    for col in ("GPU", "utilization", "est. SM efficiency", "est. occupancy", "Tensor Core time"):
        table.add_column(col, justify="right" if col != "GPU" else "left")

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.2f} %"

    for g in data["gpu"]:
        name = f"{g['device']}" + (f" {escape(g['name'])}" if g["name"] else "")
        table.add_row(
            name,
            pct(g["utilization_pct"]),
            pct(g["sm_efficiency_pct"]),
            pct(g["achieved_occupancy_pct"]),
            pct(g["tensor_core_pct"]),
        )
    console.print("[bold]GPU[/] (over the steps)")
    console.print(table)


def _operators(console: Console, data: dict[str, Any]) -> None:
    ops = data["operators"]
    if not ops:
        return
    gpu = any(o["device_total_us"] > 0 for o in ops)
    console.print()
    console.print(
        f"[bold]Top operators[/] by {'device' if gpu else 'host'} self time (whole trace)"
    )
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("operator", overflow="ellipsis", no_wrap=True, max_width=NAME_WIDTH)
    table.add_column("calls", justify="right")
    if gpu:
        table.add_column("device self", justify="right")
        table.add_column("device total", justify="right")
    table.add_column("host self", justify="right")
    table.add_column("host total", justify="right")
    for o in ops:
        cells = [escape(_short(o["name"])), f"{o['calls']:,}"]
        if gpu:
            cells += [format_us(o["device_self_us"]), format_us(o["device_total_us"])]
        cells += [format_us(o["host_self_us"]), format_us(o["host_total_us"])]
        table.add_row(*cells)
    console.print(table)


def _kernels(console: Console, data: dict[str, Any]) -> None:
    ks = data["kernels"]
    if not ks:
        return
    console.print()
    console.print("[bold]Top kernels[/] by total time (whole trace)")
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("kernel", overflow="ellipsis", no_wrap=True, max_width=NAME_WIDTH)
    for col in ("calls", "total", "mean", "blocks/SM", "occup.", "TC"):
        table.add_column(col, justify="right")
    for k in ks:
        table.add_row(
            escape(_short(k["name"])),
            f"{k['calls']:,}",
            format_us(k["total_us"]),
            format_us(k["mean_us"]),
            "" if k["blocks_per_sm"] is None else f"{k['blocks_per_sm']:.1f}",
            "" if k["achieved_occupancy_pct"] is None else f"{k['achieved_occupancy_pct']:.0f} %",
            "yes" if k["tensor_cores"] else "",
        )
    console.print(table)


def _temporal(console: Console, data: dict[str, Any]) -> None:
    console.print()
    for t in data["temporal"]:
        console.print(
            f"[bold]GPU time[/] (rank {t['rank']}, {format_us(t['span_us'])} active span): "
            f"compute {t['compute_pct']:.1f} %, non-compute {t['non_compute_pct']:.1f} %, "
            f"idle {t['idle_pct']:.1f} %"
        )
    idle = [s for s in data["idle"] if s["idle_us"] > 0]
    if idle:
        worst = max(idle, key=lambda s: s["idle_us"])
        console.print(
            f"  idle on stream {worst['stream']} (device {worst['device']}): "
            f"host wait {worst['host_wait_pct']:.0f} %, "
            f"kernel wait {worst['kernel_wait_pct']:.0f} %, other {worst['other_pct']:.0f} %"
        )
    la = data["launches"]
    if la:
        console.print(
            f"[bold]Launches[/]: {la['launches']:,} · short kernels {la['short_kernels']:,} · "
            f"launch delay mean {format_us(la['launch_delay_mean_us'])}, "
            f"p95 {format_us(la['launch_delay_p95_us'])} · outliers: runtime "
            f"{la['runtime_outliers']:,}, delay {la['launch_delay_outliers']:,}"
        )
