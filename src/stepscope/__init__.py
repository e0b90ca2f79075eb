"""stepscope: why is my model slow, and what exactly should I change?

Small explicit API::

    import stepscope
    trace = stepscope.load("run/worker0.pt.trace.json.gz")   # local path or s3://, gs://, az://
    report = stepscope.build_report(trace)                   # every analysis + ranked findings
    print(report.to_json())
    stepscope.sql(trace, "SELECT name, sum(dur_us) FROM kernels GROUP BY 1")  # an Arrow table

Capture helpers (need torch): ``stepscope.profile``, ``stepscope.annotate``,
``stepscope.ThroughputMeter``, ``stepscope.print_top_tables``, ``stepscope.export_trace``;
``with stepscope.monitor(): ...`` says what bounds the block (needs the ``monitor`` extra).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepscope.errors import StepscopeError, TraceFormatError, TraceSourceError
from stepscope.report import DEFAULT_TOP

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa

    from stepscope.model import Trace
    from stepscope.report.build import Report

__version__ = "0.1.0"


def load(path: str, *, cache: bool = True, storage_options: dict[str, Any] | None = None) -> Trace:
    """Read a trace (PyTorch profiler JSON, optionally gzipped) from a path or fsspec URL."""
    from stepscope.formats import load_trace

    return load_trace(path, use_cache=cache, storage_options=storage_options)


def build_report(trace: Trace, *, top: int = DEFAULT_TOP, step: int | None = None) -> Report:
    """Run every analysis and the advisor over ``trace``; ``.to_json()``, ``render_text``."""
    from stepscope.report.build import build_report as _build

    return _build(trace, top=top, step=step)


def sql(trace_or_path: Trace | str | Sequence[str], query: str, *, cache: bool = True) -> pa.Table:
    """Run a SQL ``query`` (DuckDB) over a trace, a path (a trace, trtexec outputs) or a run
    of ranks (a folder or several paths: every table gains a ``rank`` column); returns an
    Arrow table. The tables and columns: docs/sql.md. Needs ``pip install 'stepscope[sql]'``.
    """
    from stepscope.query import sql as _sql

    return _sql(trace_or_path, query, use_cache=cache)


_CAPTURE = {"profile", "annotate", "ThroughputMeter", "print_top_tables", "export_trace"}


def __getattr__(name: str) -> Any:
    # Capture helpers import torch, Trace imports numpy: loaded only when asked for, so the
    # command line starts (and a Ctrl-C during its imports is caught by its entry point).
    if name == "Trace":
        from stepscope.model import Trace

        return Trace
    if name == "monitor":  # not through stepscope.capture: its subpackage has the name
        from stepscope.capture.monitor.context import monitor

        return monitor
    if name in _CAPTURE:
        from stepscope import capture

        return getattr(capture, name)
    raise AttributeError(f"module 'stepscope' has no attribute {name!r}")


__all__ = [
    "StepscopeError",
    "ThroughputMeter",
    "Trace",
    "TraceFormatError",
    "TraceSourceError",
    "annotate",
    "build_report",
    "export_trace",
    "load",
    "monitor",
    "print_top_tables",
    "profile",
    "sql",
]
