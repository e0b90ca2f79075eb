"""The format-free, columnar representation every analysis works on."""

from stepscope.model.trace import (
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
