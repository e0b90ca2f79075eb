"""The format-free, columnar representation every analysis works on."""

from stepscope.model.trace import (
    DeviceDetails,
    DeviceOps,
    DeviceProperties,
    GpuAnnotations,
    HostOps,
    MemoryRecords,
    NvtxRanges,
    OsCalls,
    Runtimes,
    Syncs,
    Trace,
    TraceMeta,
)

__all__ = [
    "DeviceDetails",
    "DeviceOps",
    "DeviceProperties",
    "GpuAnnotations",
    "HostOps",
    "MemoryRecords",
    "NvtxRanges",
    "OsCalls",
    "Runtimes",
    "Syncs",
    "Trace",
    "TraceMeta",
]
