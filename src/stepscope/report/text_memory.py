"""Terminal sections for the memory and module views (from the report JSON)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stepscope.report.text import format_us

TOP_OPS = 8
TOP_MODULES = 15


def fmt_bytes(n: float | int | None) -> str:
    if n is None:
        return "n/a"
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(v) < 1024 or unit == "GiB":
            return f"{v:,.0f} {unit}" if unit == "B" else f"{v:,.2f} {unit}"
        v /= 1024
    return f"{v:,.2f} GiB"  # pragma: no cover


def _name_width(console: Console, others: list[int]) -> int:
    """Room left for the name column beside fixed-width number columns (1-space padding)."""
    return max(12, min(70, console.width - sum(others) - 2 * len(others) - 2))


def render_memory_and_modules(console: Console, data: dict[str, Any]) -> None:
    _memory(console, data.get("memory"))
    _modules(console, data.get("modules"))


def _memory(console: Console, mem: dict[str, Any] | None) -> None:
    if not mem or not (mem["devices"] or mem.get("categories")):
        return
    console.print()
    console.print("[bold]Memory[/] (profile_memory records)")
    if mem["note"]:
        console.print(f"  [dim]{escape(mem['note'])}[/]")
    cat = mem.get("categories")
    if cat:
        parts = ", ".join(f"{k.replace('_', ' ')} {fmt_bytes(v)}" for k, v in
                          sorted(cat["at_peak_bytes"].items(), key=lambda kv: -kv[1]) if v)
        console.print(f"  by category (memory timeline) at its peak of "
                      f"{fmt_bytes(cat['peak_bytes'])}: {parts}")
    for d in mem["devices"]:
        where = []
        if d["peak_step"] is not None:
            where.append(f"step {escape(d['peak_step'])}")
        if d["peak_operator"]:
            where.append(f"in {escape(d['peak_operator'])}")
        cap = (f" ({d['peak_pct_of_capacity']:.1f} % of {fmt_bytes(d['capacity_bytes'])})"
               if d["peak_pct_of_capacity"] is not None else "")
        label = "peak increase" if d["cumulative"] else "peak allocated"
        line = (f"  {d['device']}: {label} {fmt_bytes(d['peak_allocated_bytes'])}{cap} at "
                f"{format_us(d['peak_us'])}" + (f", {', '.join(where)}" if where else ""))
        if d["peak_reserved_bytes"] is not None:
            line += f"; reserved up to {fmt_bytes(d['peak_reserved_bytes'])}"
        console.print(line)
        al = d["allocations"]
        if al["matched"] or al["unfreed_count"]:
            console.print(f"    {al['count']:,} allocations, {al['matched']:,} freed in the "
                          f"trace, {al['unfreed_count']:,} never freed "
                          f"({fmt_bytes(al['unfreed_bytes'])})")
        ops = d["operators"][:TOP_OPS]
        if not ops:
            continue
        table = Table(show_edge=False, box=None, pad_edge=False)
        widths = (("calls", 6), ("alloc size", 10), ("self alloc", 10), ("allocs", 6),
                  ("increase", 10))
        table.add_column("operator", overflow="ellipsis", no_wrap=True,
                         max_width=_name_width(console, [w for _, w in widths]))
        for col, width in widths:
            table.add_column(col, justify="right", no_wrap=True, min_width=width)
        for o in ops:
            table.add_row(escape(o["name"]), f"{o['calls']:,}",
                          fmt_bytes(o["allocation_size_bytes"]),
                          fmt_bytes(o["self_allocation_size_bytes"]),
                          f"{o['allocation_count']:,}", fmt_bytes(o["size_increase_bytes"]))
        console.print(table)


def _modules(console: Console, mods: dict[str, Any] | None) -> None:
    if not mods or not mods["nodes"]:
        return
    nodes = mods["nodes"]
    device = any(n["device_total_us"] > 0 for n in nodes)
    key = "device_total_us" if device else "host_total_us"
    shown = sorted(nodes, key=lambda n: -n[key])[:TOP_MODULES]
    keep = {n["id"] for n in shown}
    console.print()
    console.print(f"[bold]Modules[/] (top {len(keep)} by {'device' if device else 'host'} "
                  "total time)")
    table = Table(show_edge=False, box=None, pad_edge=False)
    widths = (("calls", 5), ("host tot", 9), ("host self", 9), ("dev tot", 9),
              ("dev self", 9))
    table.add_column("module", overflow="ellipsis", no_wrap=True,
                     max_width=_name_width(console, [w for _, w in widths]))
    for col, width in widths:
        table.add_column(col, justify="right", no_wrap=True, min_width=width)
    for n in nodes:  # tree order
        if n["id"] not in keep:
            continue
        table.add_row("  " * n["depth"] + escape(n["name"]), f"{n['calls']:,}",
                      format_us(n["host_total_us"]), format_us(n["host_self_us"]),
                      format_us(n["device_total_us"]), format_us(n["device_self_us"]))
    console.print(table)
