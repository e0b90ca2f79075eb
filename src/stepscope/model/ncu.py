"""Nsight Compute results: one record per profiled kernel launch (format-free)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class NcuRule:
    """One of ncu's own rule results (``--page details``): advice with an estimated speedup."""

    name: str
    type: str  # OPT | WRN | INF | ERR
    section: str
    description: str
    speedup_type: str | None = None  # global | local
    speedup_pct: float | None = None


@dataclass(frozen=True)
class NcuKernel:
    """What ncu measured for one kernel launch; None where the export lacks the metric."""

    id: int
    name: str
    block: str | None = None  # "(256, 1, 1)"
    grid: str | None = None
    device: int | None = None
    compute_capability: str | None = None
    duration_ns: float | None = None
    sm_throughput_pct: float | None = None  # speed of light: compute
    memory_throughput_pct: float | None = None  # speed of light: memory
    dram_throughput_pct: float | None = None
    l1_throughput_pct: float | None = None
    l2_throughput_pct: float | None = None
    achieved_occupancy_pct: float | None = None
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None  # registers | shared memory | warps | blocks | barriers
    registers_per_thread: int | None = None
    shared_memory_bytes: int | None = None  # static + dynamic per block
    tensor_pipe_pct: float | None = None
    rules: tuple[NcuRule, ...] = ()
    # every metric as written: name -> "value unit"
    metrics: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NcuReport:
    path: str
    page: str  # "details" | "raw"
    kernels: tuple[NcuKernel, ...]
    # rows that could not be read (reason -> count); the complete rows are kept
    skipped: dict[str, int] = field(default_factory=dict)
