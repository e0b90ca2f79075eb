"""Terminal section for Nsight Systems exports: the nsys stats summaries."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.report.text.layout import (
    Column,
    bytes_column,
    count_column,
    fit_table,
    hanging,
    ns_column,
    pct_column,
    print_table,
    say,
)

TITLES = (
    ("cuda_api_sum", "CUDA API summary (cuda_api_sum)", "name"),
    ("cuda_gpu_kern_sum", "GPU kernels (cuda_gpu_kern_sum)", "name"),
    ("cuda_gpu_mem_time_sum", "GPU memory operations by time (cuda_gpu_mem_time_sum)",
     "operation"),
    ("nvtx_sum", "NVTX ranges (nvtx_sum)", "name"),
    ("osrt_sum", "OS runtime calls (osrt_sum)", "name"),
)


def _label(r: dict[str, Any], label: str) -> str:
    """The row's name; NVTX start/end ranges carry their style ('[StartEnd]')."""
    name = str(r[label])
    return name if r.get("style", "PushPop") == "PushPop" else f"{name} [{r['style']}]"


def _table(console: Console, title: str, label: str, names: list[str],
           columns: list[Column]) -> None:
    console.print()
    say(console, f"[bold]{title}[/]")
    print_table(console, fit_table(console, label, names, columns))


def render_nsys(data: dict[str, Any], console: Console, top: int) -> None:
    nsys = data.get("nsys")
    if not nsys:
        return
    export = nsys["export"]
    console.print()
    say(console, f"[bold]Nsight Systems[/] export (schema "
                 f"{escape(str(export['schema_version']))}, {escape(str(export['producer']))})")
    for d in export.get("diagnostics", [])[:5]:
        hanging(console, "  ", Text(f"nsys {d}", style="dim"), extra=2)
    for key, title, label in TITLES:
        rows = nsys[key][:top]
        if not rows:
            continue
        _table(console, title, label, [_label(r, label) for r in rows], [
            pct_column("time", [r["time_pct"] for r in rows], keep=6),
            ns_column("total", [r["total_ns"] for r in rows], keep=7),
            count_column("count", [r["count"] for r in rows], keep=5),
            ns_column("avg", [r["avg_ns"] for r in rows], keep=4),
            ns_column("med", [r["med_ns"] for r in rows], keep=2),
            ns_column("max", [r["max_ns"] for r in rows], keep=3),
        ])
    proj = nsys["nvtx_gpu_proj_sum"][:top]
    if proj:
        _table(console, "NVTX ranges projected onto the GPU (nvtx_gpu_proj_sum)", "name",
               [p["name"] for p in proj], [
                   ns_column("GPU proj.", [p["total_proj_ns"] for p in proj], keep=7),
                   ns_column("range", [p["total_range_ns"] for p in proj], keep=5),
                   count_column("instances", [p["instances"] for p in proj], keep=3),
                   count_column("GPU ops", [p["total_gpu_ops"] for p in proj], keep=4),
               ])
    sizes = nsys["cuda_gpu_mem_size_sum"]
    if sizes:
        _table(console, "GPU memory operations by size (cuda_gpu_mem_size_sum)", "operation",
               [r["operation"] for r in sizes], [
                   bytes_column("total", [r["total_bytes"] for r in sizes], keep=7),
                   count_column("count", [r["count"] for r in sizes], keep=5),
                   bytes_column("max", [r["max_bytes"] for r in sizes], keep=3),
               ])
