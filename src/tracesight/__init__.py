"""tracesight: why is my model slow, and what exactly should I change?

Small explicit API::

    import tracesight
    trace = tracesight.load("run/worker0.pt.trace.json.gz")   # local path or s3://, gs://, az://
    report = trace.report()                                  # every analysis + ranked findings
    print(report.to_json())

Capture helpers (need torch): ``tracesight.profile``, ``tracesight.annotate``,
``tracesight.ThroughputMeter``, ``tracesight.print_top_tables``, ``tracesight.export_trace``.
"""

from __future__ import annotations

from typing import Any

from tracesight.errors import TraceFormatError, TracesightError, TraceSourceError
from tracesight.model import Trace

__version__ = "0.1.0"


def load(path: str, *, cache: bool = True, storage_options: dict[str, Any] | None = None) -> Trace:
    """Read a trace (PyTorch profiler JSON, optionally gzipped) from a path or fsspec URL."""
    from tracesight.formats import load_trace

    return load_trace(path, use_cache=cache, storage_options=storage_options)


_CAPTURE = {"profile", "annotate", "ThroughputMeter", "print_top_tables", "export_trace"}


def __getattr__(name: str) -> Any:
    # Capture helpers import torch; load them only when asked for.
    if name in _CAPTURE:
        from tracesight import capture

        return getattr(capture, name)
    raise AttributeError(f"module 'tracesight' has no attribute {name!r}")


__all__ = [
    "ThroughputMeter",
    "Trace",
    "TraceFormatError",
    "TraceSourceError",
    "TracesightError",
    "annotate",
    "export_trace",
    "load",
    "print_top_tables",
    "profile",
]
