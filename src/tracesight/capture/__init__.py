"""Capture helpers: profile, annotate, measure throughput, print top tables, export.

Loaded lazily name by name so ``annotate`` and ``ThroughputMeter`` work (and cost nothing)
in programs that never import torch; ``profile`` and ``export_trace`` need torch.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesight.capture.export import export_trace
    from tracesight.capture.profiler import Profile, profile
    from tracesight.capture.ranges import annotate
    from tracesight.capture.tables import print_top_tables
    from tracesight.capture.throughput import ThroughputMeter, ThroughputStats

_WHERE = {
    "annotate": "tracesight.capture.ranges",
    "export_trace": "tracesight.capture.export",
    "Profile": "tracesight.capture.profiler",
    "profile": "tracesight.capture.profiler",
    "print_top_tables": "tracesight.capture.tables",
    "ThroughputMeter": "tracesight.capture.throughput",
    "ThroughputStats": "tracesight.capture.throughput",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesight.capture' has no attribute {name!r}")
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
