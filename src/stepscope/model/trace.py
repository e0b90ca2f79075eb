"""Columnar trace model.

One table per event family, each column a numpy array of equal length; names are
indices into ``Trace.strings``. Times are int64 nanoseconds (absolute, as the profiler
wrote them). Missing integers are -1, missing floats NaN. Tables are sorted by start time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np
import numpy.typing as npt

I8 = npt.NDArray[np.int8]
I32 = npt.NDArray[np.int32]
I64 = npt.NDArray[np.int64]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]

# HostOps.kind
HOST_OP = 0  # cpu_op / Operator: an ATen or other PyTorch operator
HOST_ANNOTATION = 1  # user_annotation: record_function ranges, ProfilerStep#N in torch 2.x
HOST_PYTHON = 2  # python_function / python: Python tracer frames

# DeviceOps.kind
DEV_KERNEL = 0
DEV_MEMCPY = 1
DEV_MEMSET = 2

T = TypeVar("T", bound="_Table")


@dataclass(frozen=True)
class _Table:
    """Base of all event tables: equal-length columns, constructible from a dict."""

    DTYPES: ClassVar[dict[str, Any]] = {}

    def __len__(self) -> int:
        first = dataclasses.fields(self)[0]
        return len(getattr(self, first.name))

    def columns(self) -> dict[str, np.ndarray[Any, Any]]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_columns(cls: type[T], cols: dict[str, np.ndarray[Any, Any]]) -> T:
        kwargs = {}
        for f in dataclasses.fields(cls):
            kwargs[f.name] = np.ascontiguousarray(cols[f.name], dtype=cls.DTYPES[f.name])
        return cls(**kwargs)

    @property
    def end(self) -> I64:
        """``ts + dur``, computed once per table (analyses ask for it hundreds of times on
        a large trace: ~0.4 s at 1 GB); read-only, so no caller can change it for others."""
        cached: I64 | None = self.__dict__.get("_end")
        if cached is None:
            ts: I64 = getattr(self, "ts")  # noqa: B009 - defined by the subclasses with an end
            dur: I64 = getattr(self, "dur")  # noqa: B009
            cached = ts + dur
            cached.setflags(write=False)
            object.__setattr__(self, "_end", cached)  # frozen dataclass: a cache, not state
        return cached


@dataclass(frozen=True)
class HostOps(_Table):
    """CPU-side ranges: operators, user annotations (incl. ProfilerStep#N), Python frames."""

    name: I32
    ts: I64
    dur: I64
    pid: I32  # string id of the pid as written
    tid: I32  # string id of the tid as written
    kind: I8
    external_id: I64
    input_dims: I32  # string id of the JSON text of "Input Dims", -1 when absent
    call_stack: I32  # string id of "Call stack" (frames separated by ';'), -1 when absent
    input_types: I32  # string id of the JSON text of "Input type" (dtypes), -1 when absent
    concrete_inputs: I32  # string id of the JSON text of "Concrete Inputs", -1 when absent
    input_strides: I32  # string id of the JSON text of "Input Strides", -1 when absent

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "pid": np.int32,
        "tid": np.int32,
        "kind": np.int8,
        "external_id": np.int64,
        "input_dims": np.int32,
        "call_stack": np.int32,
        "input_types": np.int32,
        "concrete_inputs": np.int32,
        "input_strides": np.int32,
    }


@dataclass(frozen=True)
class Runtimes(_Table):
    """Host calls into the device runtime/driver: cudaLaunchKernel, cuLaunchKernel, hip*, ..."""

    name: I32
    ts: I64
    dur: I64
    pid: I32
    tid: I32
    correlation: I64
    external_id: I64

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "pid": np.int32,
        "tid": np.int32,
        "correlation": np.int64,
        "external_id": np.int64,
    }


@dataclass(frozen=True)
class DeviceOps(_Table):
    """Work executed on an accelerator: kernels, memcpys, memsets."""

    name: I32
    ts: I64
    dur: I64
    kind: I8
    device: I32
    stream: I64
    correlation: I64
    external_id: I64
    blocks_per_sm: F32
    occupancy_pct: F32  # Kineto's "est. achieved occupancy %"
    grid_x: I32
    grid_y: I32
    grid_z: I32
    block_x: I32
    block_y: I32
    block_z: I32
    registers: I32
    shared_mem: I64
    bytes: I64

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "kind": np.int8,
        "device": np.int32,
        "stream": np.int64,
        "correlation": np.int64,
        "external_id": np.int64,
        "blocks_per_sm": np.float32,
        "occupancy_pct": np.float32,
        "grid_x": np.int32,
        "grid_y": np.int32,
        "grid_z": np.int32,
        "block_x": np.int32,
        "block_y": np.int32,
        "block_z": np.int32,
        "registers": np.int32,
        "shared_mem": np.int64,
        "bytes": np.int64,
    }


@dataclass(frozen=True)
class GpuAnnotations(_Table):
    """gpu_user_annotation: record_function ranges projected onto a device stream."""

    name: I32
    ts: I64
    dur: I64
    device: I32
    stream: I64

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "device": np.int32,
        "stream": np.int64,
    }


@dataclass(frozen=True)
class Syncs(_Table):
    """cuda_sync events: the device side of stream/event/context synchronisation."""

    name: I32
    ts: I64
    dur: I64
    device: I32
    stream: I64
    correlation: I64

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "device": np.int32,
        "stream": np.int64,
        "correlation": np.int64,
    }


@dataclass(frozen=True)
class MemoryRecords(_Table):
    """[memory] instant events from profile_memory=True: one allocation (+) or free (-) each."""

    ts: I64
    device_type: I32  # 0 CPU, 1 CUDA (others: vendor specific)
    device_id: I32
    bytes: I64
    addr: I64
    total_allocated: I64
    total_reserved: I64
    tid: I32

    DTYPES: ClassVar[dict[str, Any]] = {
        "ts": np.int64,
        "device_type": np.int32,
        "device_id": np.int32,
        "bytes": np.int64,
        "addr": np.int64,
        "total_allocated": np.int64,
        "total_reserved": np.int64,
        "tid": np.int32,
    }


# NvtxRanges.style
NVTX_PUSHPOP = 0  # nvtxRangePush/Pop: nested per thread
NVTX_STARTEND = 1  # nvtxRangeStart/End: may end on another thread

# DeviceDetails memory kinds (CUPTI's, as nsys exports them): src_kind, dst_kind
MEM_PAGEABLE = 0
MEM_PINNED = 1
MEM_DEVICE = 2
MEM_ARRAY = 3
MEM_MANAGED = 4


@dataclass(frozen=True)
class NvtxRanges(_Table):
    """NVTX ranges (Nsight Systems): push/pop and start/end, with their domain."""

    name: I32  # the range's message (registered strings resolved)
    ts: I64
    dur: I64
    pid: I32
    tid: I32
    domain: I32  # string id of the domain name, -1 for the default domain
    style: I8  # NVTX_PUSHPOP | NVTX_STARTEND
    payload: F64  # the range's numeric payload (int/uint/double/float), NaN when none

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "pid": np.int32,
        "tid": np.int32,
        "domain": np.int32,
        "style": np.int8,
        "payload": np.float64,
    }


@dataclass(frozen=True)
class OsCalls(_Table):
    """OS runtime calls (libc/pthread: poll, read, pthread_cond_wait, ...) from nsys."""

    name: I32
    ts: I64
    dur: I64
    pid: I32
    tid: I32

    DTYPES: ClassVar[dict[str, Any]] = {
        "name": np.int32,
        "ts": np.int64,
        "dur": np.int64,
        "pid": np.int32,
        "tid": np.int32,
    }


@dataclass(frozen=True)
class DeviceDetails(_Table):
    """Per device op, row-aligned with ``Trace.device`` when not empty (nsys only).

    ``copy_kind`` is CUPTI's memcpy kind (1 HtoD, 2 DtoH, 8 DtoD, 10 PtoP, ...), -1 for
    kernels and memsets; ``src_kind``/``dst_kind`` are MEM_* (a memset's memory kind is its
    ``dst_kind``); ``mangled`` is the string id of a kernel's mangled name (-1 if unknown).
    """

    copy_kind: I8
    src_kind: I8
    dst_kind: I8
    mangled: I32
    pid: I32

    DTYPES: ClassVar[dict[str, Any]] = {
        "copy_kind": np.int8,
        "src_kind": np.int8,
        "dst_kind": np.int8,
        "mangled": np.int32,
        "pid": np.int32,
    }


def _empty(cls: type[T]) -> Callable[[], T]:
    return lambda: cls.from_columns({n: np.empty(0, d) for n, d in cls.DTYPES.items()})


@dataclass(frozen=True)
class Collectives(_Table):
    """Collective calls with their communication arguments (one row per event carrying them).

    Rows come from ``record_param_comms`` / ``nccl:*`` / ``gloo:*`` host ranges and from
    device kernels that carry Kineto's collective args (``Collective name``, ``In msg nelems``,
    ``dtype``, ``Group size``, ``Process Group Name``). For gloo ranges without those args the
    element count comes from ``Input Dims`` and the dtype from ``Input type``.
    """

    ts: I64
    dur: I64
    on_device: I8  # 1: a device kernel, 0: a host range
    name: I32  # the event's own name
    collective: I32  # normalised collective name ("allreduce", "allgather", ...), -1 unknown
    in_nelems: I64
    out_nelems: I64
    dtype: I32  # dtype as written ("Float", "float", "BFloat16", ...), -1 unknown
    group_size: I32
    pg: I32  # "Process Group Name", -1 unknown
    seq: I64  # "Seq": the process group's call counter (NCCL, PyTorch >= 2.4), -1 unknown
    # string ids of "[64,64,...]": NCCL's "In/Out split size" (rows per peer, all-to-all) and
    # "Process Group Ranks" (the group's global ranks); -1 absent or empty
    in_splits: I32
    out_splits: I32
    pg_ranks: I32

    DTYPES: ClassVar[dict[str, Any]] = {
        "ts": np.int64,
        "dur": np.int64,
        "on_device": np.int8,
        "name": np.int32,
        "collective": np.int32,
        "in_nelems": np.int64,
        "out_nelems": np.int64,
        "dtype": np.int32,
        "group_size": np.int32,
        "pg": np.int32,
        "seq": np.int64,
        "in_splits": np.int32,
        "out_splits": np.int32,
        "pg_ranks": np.int32,
    }


def empty_collectives() -> Collectives:
    cols = {k: np.empty(0, dtype=v) for k, v in Collectives.DTYPES.items()}
    return Collectives.from_columns(cols)


@dataclass(frozen=True)
class DeviceProperties:
    id: int
    name: str
    total_memory: int
    compute_major: int
    compute_minor: int
    num_sms: int
    max_threads_per_sm: int
    warp_size: int
    # Optional hardware facts (nsys TARGET_INFO_GPU); 0 when unknown.
    clock_hz: int = 0
    memory_bandwidth: int = 0  # bytes/s
    l2_cache_bytes: int = 0
    max_warps_per_sm: int = 0
    max_blocks_per_sm: int = 0
    max_registers_per_sm: int = 0
    max_shared_memory_per_sm: int = 0


@dataclass(frozen=True)
class TraceMeta:
    path: str
    format: str  # "kineto"
    events: int  # events read from the file (all phases)
    schema_version: int | None = None
    devices: tuple[DeviceProperties, ...] = ()
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    window_start: int | None = None  # ns; the "PyTorch Profiler (0)" span when present
    window_end: int | None = None
    vendor: str = "unknown"  # nvidia | amd | intel | mtia | cpu | unknown
    categories: dict[str, int] = field(default_factory=dict)  # events per category as read
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count (partial data)
    warnings: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # how the reader interpreted the file (not data loss)
    incomplete: bool = False  # part of the input was lost: a cut file, a sidecar left out
    format_version: str | None = None  # e.g. the nsys export schema version "3.17.1"
    producer: str | None = None  # e.g. "NVIDIA Nsight Systems 2025.1.1.110"
    diagnostics: tuple[str, ...] = ()  # the profiler's own warnings/errors (nsys DIAGNOSTIC_EVENT)
    # Kineto's baseTimeNanoseconds: event times are relative to it (wall clock = ts + base);
    # None for traces with absolute (epoch) times
    base_time_ns: int | None = None
    # distributedInfo.pg_config: the rank's process groups as (name, global ranks)
    process_groups: tuple[tuple[str, tuple[int, ...]], ...] = ()


@dataclass(frozen=True)
class Trace:
    """One rank's trace: metadata, a string table and the event tables."""

    meta: TraceMeta
    strings: tuple[str, ...]
    host: HostOps
    runtime: Runtimes
    device: DeviceOps
    gpu_annotations: GpuAnnotations
    syncs: Syncs
    memory: MemoryRecords
    nvtx: NvtxRanges = field(default_factory=_empty(NvtxRanges))
    osrt: OsCalls = field(default_factory=_empty(OsCalls))
    device_details: DeviceDetails = field(default_factory=_empty(DeviceDetails))
    collectives: Collectives = field(default_factory=empty_collectives)
    _masks: dict[Callable[[str], object], npt.NDArray[np.bool_]] = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    TABLES: ClassVar[dict[str, type[_Table]]] = {
        "host": HostOps,
        "runtime": Runtimes,
        "device": DeviceOps,
        "gpu_annotations": GpuAnnotations,
        "syncs": Syncs,
        "memory": MemoryRecords,
        "nvtx": NvtxRanges,
        "osrt": OsCalls,
        "device_details": DeviceDetails,
        "collectives": Collectives,
    }

    def name(self, string_id: int) -> str:
        return self.strings[string_id] if string_id >= 0 else ""

    def string_ids(self, predicate: Callable[[str], object]) -> npt.NDArray[np.bool_]:
        """Boolean mask over the string table: which strings satisfy ``predicate(str)``.

        Index it with a name column. Masks are memoised per predicate: the analyses and the
        advisor ask for the same classifications (steps, loaders, Tensor Core kernels, ...),
        and each costs one Python call per distinct string. Pass module-level predicates:
        a fresh lambda misses the memo and adds an entry each time.
        """
        cached = self._masks.get(predicate)
        if cached is None:
            cached = np.fromiter(
                (bool(predicate(s)) for s in self.strings), dtype=bool, count=len(self.strings)
            )
            self._masks[predicate] = cached
        return cached

    @property
    def has_gpu(self) -> bool:
        return len(self.device) > 0
