"""The format-free, columnar representation every analysis works on."""

from stepscope.model.trace import (
    Collectives,
    DeviceOps,
    DeviceProperties,
    GpuAnnotations,
    HostOps,
    MemoryRecords,
    Runtimes,
    Syncs,
    Trace,
    TraceMeta,
)

__all__ = [
    "Collectives",
    "DeviceOps",
    "DeviceProperties",
    "GpuAnnotations",
    "HostOps",
    "MemoryRecords",
    "Runtimes",
    "Syncs",
    "Trace",
    "TraceMeta",
]
