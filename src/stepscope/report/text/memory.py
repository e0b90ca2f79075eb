"""Terminal sections for the memory and module views (from the report JSON)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.report.text.layout import (
    bytes_column,
    count_column,
    fit_table,
    hanging,
    print_table,
    say,
    time_column,
)
from stepscope.units import format_bytes as fmt_bytes
from stepscope.units import format_us

TOP_OPS = 8
TOP_MODULES = 15


def render_memory_and_modules(console: Console, data: dict[str, Any]) -> None:
    _memory(console, data.get("memory"))
    _modules(console, data.get("modules"))


def _memory(console: Console, mem: dict[str, Any] | None) -> None:
    if not mem or not (mem["devices"] or mem.get("categories")):
        return
    console.print()
    console.print("[bold]Memory[/] (profile_memory records)")
    if mem["note"]:
        hanging(console, "  ", Text(mem["note"], style="dim"))
    cat = mem.get("categories")
    if cat:
        parts = ", ".join(f"{k.replace('_', ' ')} {fmt_bytes(v)}" for k, v in
                          sorted(cat["at_peak_bytes"].items(), key=lambda kv: -kv[1]) if v)
        say(console, f"  by category (memory timeline) at its peak of "
                     f"{fmt_bytes(cat['peak_bytes'])}: {escape(parts)}")
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
        say(console, line)  # wrapped under its own indent, never to column 0
        al = d["allocations"]
        if al["matched"] or al["unfreed_count"]:
            say(console, f"    {al['count']:,} allocations, {al['matched']:,} freed in the "
                         f"trace, {al['unfreed_count']:,} never freed "
                         f"({fmt_bytes(al['unfreed_bytes'])})")
        ops = d["operators"][:TOP_OPS]
        if not ops:
            continue
        columns = [
            count_column("calls", [o["calls"] for o in ops], keep=2),
            bytes_column("alloc size", [o["allocation_size_bytes"] for o in ops], keep=5),
            bytes_column("self alloc", [o["self_allocation_size_bytes"] for o in ops], keep=3),
            count_column("allocs", [o["allocation_count"] for o in ops], keep=1),
            bytes_column("increase", [o["size_increase_bytes"] for o in ops], keep=4),
        ]
        print_table(console, fit_table(console, "operator", [o["name"] for o in ops], columns,
                                       indent=4),
                    indent=4)


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
    rows = [n for n in nodes if n["id"] in keep]  # tree order
    columns = [count_column("calls", [n["calls"] for n in rows], keep=3),
               time_column("host total", [n["host_total_us"] for n in rows], keep=4),
               time_column("host self", [n["host_self_us"] for n in rows], keep=2)]
    if device:
        columns += [time_column("device total", [n["device_total_us"] for n in rows], keep=5),
                    time_column("device self", [n["device_self_us"] for n in rows], keep=1)]
    names = ["  " * n["depth"] + n["name"] for n in rows]
    print_table(console, fit_table(console, "module", names, columns))
