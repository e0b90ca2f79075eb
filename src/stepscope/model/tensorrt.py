"""TensorRT run model: what ``trtexec`` exports (profile, times, layer info, log summary).

Format-free plain data: the readers in ``formats/trtexec*`` build these, the analyses in
``analysis/tensorrt*`` consume them. Times stay in the unit trtexec wrote (ms, float):
they are aggregates and summaries, never event timestamps to be ordered.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

F64 = npt.NDArray[np.float64]


@dataclass(frozen=True)
class LayerTime:
    """One row of ``--exportProfile`` (or of the log's ``--dumpProfile`` table)."""

    name: str
    time_ms: float  # summed over all profiled iterations
    average_ms: float
    median_ms: float | None  # absent before TRT 8.4
    percentage: float
    profile: int = 0  # optimisation profile k from a " [profile k]" suffix


@dataclass(frozen=True)
class LayerProfile:
    path: str
    count: int | None  # profiled iterations ("count" element), None when absent
    layers: tuple[LayerTime, ...]
    salvaged: bool = False  # the JSON was invalid and was read line by line


@dataclass(frozen=True)
class IterationTimes:
    """``--exportTimes``: one entry per timed iteration, ms on trtexec's clock."""

    path: str
    start_enq: F64
    end_enq: F64
    h2d: F64
    compute: F64
    d2h: F64
    latency: F64
    start_compute: F64
    end_compute: F64

    def __len__(self) -> int:
        return len(self.latency)


@dataclass(frozen=True)
class TensorInfo:
    name: str
    dtype: str  # normalised: FP32, FP16, BF16, INT8, FP8, INT32, INT64, BOOL, UINT8, INT4, FP4, ?
    format: str  # the text as trtexec wrote it ("Row major linear FP32", "Half", "Int8[...]")
    dims: tuple[int, ...]
    location: str = "Device"


@dataclass(frozen=True)
class EngineLayer:
    name: str
    layer_type: str  # "" when the layer info is names-only
    inputs: tuple[TensorInfo, ...] = ()
    outputs: tuple[TensorInfo, ...] = ()
    tactic_name: str = ""
    tactic_value: str = ""
    metadata: str = ""  # originating ONNX nodes (8.6+)
    extra: tuple[tuple[str, str], ...] = ()  # other keys as compact text (Kernel, Stride, ...)


@dataclass(frozen=True)
class EngineGraph:
    """``--exportLayerInfo`` (or the log's "Engine Layer Information")."""

    path: str
    layers: tuple[EngineLayer, ...]
    bindings: tuple[str, ...]
    detailed: bool  # False: names only
    salvaged: bool = False


# Summary keys as trtexec prints them, in its order.
SUMMARY_METRICS = (
    "Latency",
    "Enqueue Time",
    "H2D Latency",
    "GPU Compute Time",
    "D2H Latency",
    "End-to-End Host Latency",
)


@dataclass(frozen=True)
class Stat:
    """One summary line: min/max/mean/median and percentiles, ms."""

    min: float
    max: float
    mean: float
    median: float
    percentiles: tuple[tuple[float, float], ...] = ()  # (p, value)
    cv_pct: float | None = None  # coefficient of variance when known


@dataclass(frozen=True)
class PerfSummary:
    """``=== Performance summary ===`` (from a log, a trex metadata file, or exportTimes)."""

    source: str  # "log" | "trex-metadata" | "times"
    throughput_qps: float | None
    stats: tuple[tuple[str, Stat], ...]  # (metric, stat) in SUMMARY_METRICS order
    walltime_s: float | None = None
    gpu_compute_total_s: float | None = None

    def get(self, metric: str) -> Stat | None:
        for name, stat in self.stats:
            if name == metric:
                return stat
        return None


@dataclass(frozen=True)
class TrtLog:
    """What the text log of one trtexec run says."""

    path: str
    version: str | None  # "8.5.2"
    command: str | None
    passed: bool | None
    options: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]  # (block, ((key, value), ...))
    summary: PerfSummary | None
    warnings: tuple[str, ...]  # trtexec's own performance warnings ("* ..." lines) and [W] lines
    profile: LayerProfile | None  # the --dumpProfile table
    graph: EngineGraph | None  # the "Engine Layer Information" one-line dump

    def option(self, key: str) -> str | None:
        for _block, items in self.options:
            for k, v in items:
                if k == key:
                    return v
        return None


@dataclass(frozen=True)
class TrtRun:
    """Every trtexec output found for one engine; any part may be missing."""

    path: str
    name: str  # engine name (file prefix)
    profile: LayerProfile | None = None
    times: IterationTimes | None = None
    graph: EngineGraph | None = None
    log: TrtLog | None = None
    summary: PerfSummary | None = None  # trex .profile.metadata.json when no log
    options: tuple[tuple[str, str], ...] = ()  # inference/build options from trex metadata
    device: tuple[tuple[str, str], ...] = ()  # device information
    files: tuple[str, ...] = ()
    warnings: tuple[str, ...] = field(default_factory=tuple)  # reading problems (partial input)

    def option(self, key: str) -> str | None:
        if self.log is not None:
            v = self.log.option(key)
            if v is not None:
                return v
        for k, v in self.options:
            if k == key:
                return v
        return None


I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class LayerKernelTrace:
    """NVTX ranges, kernels and launch calls of an nsys export (ns, nsys clock).

    Names are interned: ``range_name[i]`` indexes ``range_names``, ``kernel_name[i]`` indexes
    ``kernel_names``.
    """

    path: str
    range_names: tuple[str, ...]  # distinct range names
    range_name: I64  # per range: index into range_names
    range_start: I64
    range_end: I64
    range_tid: I64
    kernel_names: tuple[str, ...]  # distinct kernel names
    kernel_name: I64  # per kernel: index into kernel_names
    kernel_start: I64
    kernel_end: I64
    kernel_corr: I64
    launch_corr: I64  # CUDA runtime calls
    launch_start: I64
    launch_tid: I64
