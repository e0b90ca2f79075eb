"""``print_top_tables``: the operator tables people used to get from ``key_averages()``.

Three tables from stepscope's own operator statistics (the same numbers as the report):
top operators by self device time (only when the trace has device activity: no empty
CUDA columns on CPU runs), by self CPU time, and grouped by input shape.
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from stepscope.analysis.operators import OperatorRow, operator_stats
from stepscope.errors import UsageError
from stepscope.formats.load import load_trace
from stepscope.model import Trace
from stepscope.report.text import format_us  # the report's time format

NAME_WIDTH = 60
SHAPE_WIDTH = 40
WIDE = 120  # console columns from which total times are shown too


def print_top_tables(prof_or_trace: Any, n: int = 20, *, console: Console | None = None) -> None:
    """Print the top-``n`` operator tables for a profiler, a Trace or a trace path/URL."""
    trace = as_trace(prof_or_trace)
    console = console or Console()
    gpu = trace.has_gpu
    by_name = operator_stats(trace)
    if not by_name:
        console.print("No operators in this trace (was anything run inside the profiled steps?)")
        return
    if gpu:
        rows = sorted(by_name, key=lambda r: (-r.device_self_us, -r.host_self_us, r.name))
        _table(console, "Top operators by self device time", rows[:n], gpu=True,
               share_of=sum(r.device_self_us for r in by_name), device_share=True)
    rows = sorted(by_name, key=lambda r: (-r.host_self_us, r.name))
    _table(console, "Top operators by self CPU time", rows[:n], gpu=gpu,
           share_of=sum(r.host_self_us for r in by_name), device_share=False)
    by_shape = operator_stats(trace, by_shape=True)
    key = "device" if gpu else "CPU"
    _table(console, f"Top operators by input shape (self {key} time)", by_shape[:n], gpu=gpu,
           share_of=sum((r.device_self_us if gpu else r.host_self_us) for r in by_shape),
           device_share=gpu, shapes=True)


def as_trace(source: Any) -> Trace:
    """A Trace from a Trace, a path/URL, or a torch profiler that has finished a cycle."""
    if isinstance(source, Trace):
        return source
    if isinstance(source, (str, os.PathLike)):
        return load_trace(os.fspath(source))
    if hasattr(source, "export_chrome_trace"):
        from stepscope.capture.export import export_trace

        with tempfile.TemporaryDirectory(prefix="stepscope-tables-") as tmp:
            path = export_trace(source, os.path.join(tmp, "trace.json"))
            return load_trace(path, use_cache=False)
    raise UsageError(f"print_top_tables: expected a torch profiler, a Trace or a trace path, "
                     f"got {type(source).__name__}")


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(console: Console, title: str, rows: list[OperatorRow], *, gpu: bool,
           share_of: float, device_share: bool, shapes: bool = False) -> None:
    table = Table(title=title, title_justify="left", title_style="bold", show_edge=False,
                  box=None, pad_edge=False)
    # Totals only where they fit: an 80-column terminal shows the self times in full.
    wide = console.width >= WIDE + (SHAPE_WIDTH if shapes else 0)
    headers = ["calls", "share"]
    if gpu:
        headers += ["self device", "total device"] if wide else ["self device"]
    headers += ["self CPU", "total CPU"] if wide else ["self CPU"]
    # One line per row: numbers never wrap; names get what is left and are cut with "…".
    # (counts and shares are at most 6 characters wide, times 9: "142.46 ms")
    left = console.width - sum(max(len(h), 6 if i < 2 else 9) + 2 for i, h in enumerate(headers))
    name_width = max(16, min(NAME_WIDTH, left // 2 if shapes else left))
    table.add_column("operator", no_wrap=True, overflow="ellipsis", max_width=name_width)
    if shapes:
        shape_width = max(12, min(SHAPE_WIDTH, left - name_width - 2))
        table.add_column("input shapes", no_wrap=True, overflow="ellipsis",
                         max_width=shape_width)
    for header in headers:
        table.add_column(header, justify="right", no_wrap=True, min_width=len(header))
    for r in rows:
        own = r.device_self_us if device_share else r.host_self_us
        cells = [escape(_short(r.name, NAME_WIDTH))]
        if shapes:
            cells.append(escape(_short(r.input_shape or "", SHAPE_WIDTH)) or "-")
        cells += [f"{r.calls:,}", f"{100.0 * own / share_of:.1f}%" if share_of > 0 else "-"]
        if gpu:
            cells += [format_us(r.device_self_us)]
            cells += [format_us(r.device_total_us)] if wide else []
        cells += [format_us(r.host_self_us)] + ([format_us(r.host_total_us)] if wide else [])
        table.add_row(*cells)
    console.print()
    console.print(table)
