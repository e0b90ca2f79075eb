"""Terminal section for Nsight Systems exports: the nsys stats summaries."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stepscope.report.text_layout import short_name

TITLES = (
    ("cuda_api_sum", "CUDA API summary (cuda_api_sum)", "name"),
    ("cuda_gpu_kern_sum", "GPU kernels (cuda_gpu_kern_sum)", "name"),
    ("cuda_gpu_mem_time_sum", "GPU memory operations by time (cuda_gpu_mem_time_sum)",
     "operation"),
    ("nvtx_sum", "NVTX ranges (nvtx_sum)", "name"),
    ("osrt_sum", "OS runtime calls (osrt_sum)", "name"),
)
NAME_WIDTH = 60


def _ns(v: float) -> str:
    if v >= 1e6:
        return f"{v / 1e6:,.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:,.1f} µs"
    return f"{v:,.0f} ns"


def _short(name: str, width: int) -> str:
    return short_name(name, width)


def render_nsys(data: dict[str, Any], console: Console, top: int) -> None:
    nsys = data.get("nsys")
    if not nsys:
        return
    export = nsys["export"]
    width = max(16, min(NAME_WIDTH, console.width - 62))
    console.print()
    console.print(f"[bold]Nsight Systems[/] export (schema {escape(str(export['schema_version']))}"
                  f", {escape(str(export['producer']))})")
    for d in export.get("diagnostics", [])[:5]:
        console.print(f"  [dim]nsys {escape(d)}[/]")
    for key, title, label in TITLES:
        rows = nsys[key][:top]
        if not rows:
            continue
        console.print()
        console.print(f"[bold]{title}[/]")
        table = Table(show_edge=False, box=None, pad_edge=False)
        for col in ("time %", "total", "count", "avg", "med", "max"):
            table.add_column(col, justify="right", no_wrap=True)
        table.add_column(label, overflow="ellipsis", no_wrap=True, max_width=width)
        for r in rows:
            name = r[label] if "style" not in r or r["style"] == "PushPop" else \
                f"{r[label]} [{r['style']}]"
            table.add_row(f"{r['time_pct']:.1f}", _ns(r["total_ns"]), f"{r['count']:,}",
                          _ns(r["avg_ns"]), _ns(r["med_ns"]), _ns(r["max_ns"]),
                          escape(_short(name, width)))
        console.print(table)
    proj = nsys["nvtx_gpu_proj_sum"][:top]
    if proj:
        console.print()
        console.print("[bold]NVTX ranges projected onto the GPU (nvtx_gpu_proj_sum)[/]")
        table = Table(show_edge=False, box=None, pad_edge=False)
        for col in ("GPU proj.", "range", "instances", "GPU ops"):
            table.add_column(col, justify="right", no_wrap=True)
        table.add_column("name", overflow="ellipsis", no_wrap=True, max_width=width)
        for p in proj:
            table.add_row(_ns(p["total_proj_ns"]), _ns(p["total_range_ns"]),
                          f"{p['instances']:,}", f"{p['total_gpu_ops']:,}",
                          escape(_short(p["name"], width)))
        console.print(table)
    sizes = nsys["cuda_gpu_mem_size_sum"]
    if sizes:
        console.print()
        console.print("[bold]GPU memory operations by size (cuda_gpu_mem_size_sum)[/]")
        for r in sizes:
            console.print(f"  {escape(r['operation'])}: {r['total_bytes'] / 1e6:,.3f} MB in "
                          f"{r['count']:,} op(s), max {r['max_bytes'] / 1e6:,.3f} MB")
