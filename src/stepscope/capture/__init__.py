"""Capture helpers: profile, annotate, measure throughput, print top tables, export.

Loaded lazily name by name so ``annotate`` and ``ThroughputMeter`` work (and cost nothing)
in programs that never import torch; ``profile`` and ``export_trace`` need torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepscope.capture.export import export_trace
    from stepscope.capture.profiler import Profile, profile
    from stepscope.capture.ranges import annotate
    from stepscope.capture.tables import print_top_tables
    from stepscope.capture.throughput import ThroughputMeter, ThroughputStats

_WHERE = {
    "annotate": "stepscope.capture.ranges",
    "export_trace": "stepscope.capture.export",
    "Profile": "stepscope.capture.profiler",
    "profile": "stepscope.capture.profiler",
    "print_top_tables": "stepscope.capture.tables",
    "ThroughputMeter": "stepscope.capture.throughput",
    "ThroughputStats": "stepscope.capture.throughput",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'stepscope.capture' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


__all__ = [
    "Profile",
    "ThroughputMeter",
    "ThroughputStats",
    "annotate",
    "export_trace",
    "print_top_tables",
    "profile",
]
