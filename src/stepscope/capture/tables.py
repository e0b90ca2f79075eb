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

from stepscope.analysis.events.links import Links
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.trace.operators import OperatorRow, operator_stats
from stepscope.errors import UsageError
from stepscope.formats.load import load_trace
from stepscope.model import Trace
from stepscope.report.text.layout import (
    MISSING,
    Column,
    count_column,
    fit_table,
    pct_column,
    print_table,
    time_column,
)


def print_top_tables(prof_or_trace: Any, n: int = 20, *, console: Console | None = None) -> None:
    """Print the top-``n`` operator tables for a profiler, a Trace or a trace path/URL."""
    trace = as_trace(prof_or_trace)
    console = console or Console()
    gpu = trace.has_gpu
    links = Links(trace)  # one Links and OpTree for both tables
    tree = OpTree(trace, links)
    by_name = operator_stats(trace, links=links, tree=tree)
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
    by_shape = operator_stats(trace, by_shape=True, links=links, tree=tree)
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


def _table(console: Console, title: str, rows: list[OperatorRow], *, gpu: bool,
           share_of: float, device_share: bool, shapes: bool = False) -> None:
    """One table in the report's layout: one unit per time column, nothing wraps; the least
    important columns (totals first) give way on narrow terminals."""
    columns = [count_column("calls", [r.calls for r in rows], keep=8)]
    own = [r.device_self_us if device_share else r.host_self_us for r in rows]
    columns.append(pct_column("share", [100.0 * x / share_of if share_of > 0 else None
                                        for x in own], keep=7))
    if gpu:
        columns += [time_column("self device", [r.device_self_us for r in rows], keep=6),
                    time_column("total device", [r.device_total_us for r in rows], keep=2)]
    columns += [time_column("self CPU", [r.host_self_us for r in rows], keep=5),
                time_column("total CPU", [r.host_total_us for r in rows], keep=1)]
    if shapes:
        columns.insert(0, Column("input shapes", [r.input_shape or MISSING for r in rows],
                                 keep=9, justify="left", max_width=console.width // 4))
    console.print()
    console.print(f"[bold]{escape(title)}[/]")
    print_table(console, fit_table(console, "operator", [r.name for r in rows], columns))
