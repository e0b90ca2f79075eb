"""One rank's communication picture: computation/communication/overlap per step, and its calls.

The result is small (a few numbers per step plus one row per collective call), so many ranks'
summaries travel cheaply from workers to the coordinator (analysis/distributed/run.py reduces them).

Definitions (torch-tb-profiler's distributed view, HTA's overlap):
- GPU traces: *computation* is the union of non-communication kernels, *communication* the
  union of communication kernels (``is_collective_kernel`` or kernels carrying collective args).
- CPU-only traces (gloo): *computation* is the union of host operators except the c10d wrappers
  and *communication* the union of the backend's own ranges (``gloo:all_reduce``, ...).
- overlap = computation ∩ communication; reported computation and communication exclude it;
  other = step time − (computation ∪ communication).
- comm_overlap_pct = overlap / (overlap + communication) × 100 (HTA's definition).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stepscope.analysis.distributed.pipeline import StagePart, stage_part
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links
from stepscope.analysis.events.steps import find_steps
from stepscope.classify.names import is_collective_kernel
from stepscope.model.trace import DEV_KERNEL, HOST_OP, Trace

if TYPE_CHECKING:
    from stepscope.analysis.distributed.all_to_all import RankAllToAll
    from stepscope.analysis.distributed.fsdp import RankFsdp
    from stepscope.analysis.trace.operators import OperatorRow

# dtype as Kineto writes it (NCCL args: "Float", "BFloat16"; Input type: "float", "c10::Half")
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2,
    "bfloat16": 2, "c10::half": 2, "c10::bfloat16": 2, "int": 4, "int32": 4, "long": 8,
    "int64": 8, "long int": 8, "short": 2, "int16": 2, "char": 1, "int8": 1, "byte": 1, "uint8": 1,
    "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1, "complexfloat": 8, "complexdouble": 16,
}

# point-to-point calls: not collectives (analysis/distributed/pipeline.py reads them)
P2P = frozenset(("send", "recv", "isend", "irecv", "sendrecv", "recvanysource"))

_KERNEL_COLLECTIVES = (  # token in a kernel name -> collective (NCCL/RCCL kernel names)
    ("allreduce", "allreduce"), ("reducescatter", "reducescatter"), ("allgather", "allgather"),
    ("alltoall", "alltoall"), ("sendrecv", "sendrecv"), ("broadcast", "broadcast"),
    ("reduce", "reduce"), ("send", "send"), ("recv", "recv"),
)


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a dtype as written in a trace; 0 when unknown."""
    return DTYPE_BYTES.get(dtype.lower().removeprefix("torch."), 0)


def kernel_collective(name: str) -> str:
    low = name.lower().replace("_", "")
    for token, coll in _KERNEL_COLLECTIVES:
        if token in low:
            return coll
    return "unknown"


@dataclass(frozen=True)
class StepComm:
    step: str
    start_ns: int
    end_ns: int
    computation_ns: int  # computation not overlapped by communication
    overlap_ns: int
    communication_ns: int  # communication not overlapped by computation
    other_ns: int


@dataclass(frozen=True)
class Call:
    """One collective call on this rank (its position in its sequence matches it across ranks)."""

    collective: str
    pg: str
    seq: int  # index among this rank's calls with the same (collective, pg)
    start_ns: int
    dur_ns: int
    nelems: int  # -1 unknown
    nbytes: int  # -1 unknown
    dtype: str
    group_size: int  # -1 unknown
    step: str  # the step the call starts in ("" outside every step)
    trace_seq: int = -1  # the process group's own counter ("Seq" in the trace), -1 unknown


@dataclass(frozen=True)
class RankSummary:
    path: str
    rank: int | None  # from distributedInfo
    world_size: int | None
    backend: str | None
    on_device: bool  # communication measured on device kernels (else host ranges)
    steps: tuple[StepComm, ...]
    calls: tuple[Call, ...]
    # (operator, self time ns: device self on GPU traces, host self on CPU), largest first,
    # communication wrappers excluded: what a straggler's extra time is spent in
    top_ops: tuple[tuple[str, int], ...] = ()
    # which process wrote the trace, and when (report/folder.py: ranks or spans of one process)
    pid: str | None = None  # the host process id as written
    start_ns: int = 0  # the capture's window, wall-clock ns
    end_ns: int = 0
    all_to_all: RankAllToAll | None = None  # analysis/distributed/all_to_all.py
    fsdp: RankFsdp | None = None  # analysis/distributed/fsdp.py
    clock_base_ns: int = 0  # added to the calls' times for the wall clock (baseTimeNanoseconds)
    pipeline: StagePart | None = None  # point-to-point traffic and compute split (pipeline.py)
    process_groups: tuple[tuple[str, tuple[int, ...]], ...] = ()  # distributedInfo.pg_config

    def total(self, field: str) -> int:
        return int(sum(getattr(s, field) for s in self.steps))

    @property
    def comm_overlap_pct(self) -> float | None:
        comm = self.total("overlap_ns") + self.total("communication_ns")
        return None if comm == 0 else 100.0 * self.total("overlap_ns") / comm


def _collective_rows(trace: Trace) -> tuple[np.ndarray, bool]:
    """Indices of the Collectives rows that are the execution of calls, and on_device."""
    c = trace.collectives
    dev = np.flatnonzero(c.on_device == 1)
    if len(dev):
        return dev, True
    host = np.flatnonzero(c.on_device == 0)
    names = c.name[host]
    backend = trace.string_ids(_is_backend_range)[names] & (names >= 0)
    return (host[backend] if backend.any() else host), False


def _is_backend_range(name: str) -> bool:
    """The backend's own record of a call (``gloo:all_reduce``, ``nccl:broadcast``, ...)."""
    return name.startswith(("gloo:", "nccl:", "rccl:", "mpi:", "ucc:", "xccl:"))


def _calls(trace: Trace, starts: np.ndarray, ends: np.ndarray, names: list[str]) -> list[Call]:
    c = trace.collectives
    rows, on_device = _collective_rows(trace)
    calls: list[Call] = []
    counters: dict[tuple[str, str], int] = {}
    if len(rows) and (on_device or not trace.has_gpu):
        for i in rows.tolist():
            coll = trace.name(int(c.collective[i])) or kernel_collective(trace.name(int(c.name[i])))
            if coll in P2P:
                continue
            pg = trace.name(int(c.pg[i]))
            dtype = trace.name(int(c.dtype[i]))
            n = int(max(c.in_nelems[i], c.out_nelems[i]))
            size = dtype_bytes(dtype)
            calls.append(_call(coll, pg, counters, int(c.ts[i]), int(c.dur[i]), n,
                               n * size if n >= 0 and size else -1, dtype, int(c.group_size[i]),
                               starts, ends, names, int(c.seq[i])))
    elif trace.has_gpu:  # communication kernels without collective args
        d = trace.device
        mask = trace.string_ids(is_collective_kernel)[d.name] & (d.kind == DEV_KERNEL)
        kernels = np.flatnonzero(mask)
        # Older traces put sizes on the host's nccl:* ranges only. When there are exactly as
        # many ranges as kernels, the i-th range launched the i-th kernel: take its collective,
        # sizes and dtype, and the kernel's timing.
        host = rows if len(rows) == len(kernels) else np.empty(0, dtype=np.int64)
        for j, i in enumerate(kernels.tolist()):
            coll = kernel_collective(trace.name(int(d.name[i])))
            n, dtype, group, pg = -1, "", -1, ""
            if len(host):
                h = int(host[j])
                coll = trace.name(int(c.collective[h])) or coll
                n = int(max(c.in_nelems[h], c.out_nelems[h]))
                dtype, group, pg = (trace.name(int(c.dtype[h])), int(c.group_size[h]),
                                    trace.name(int(c.pg[h])))
            if coll in P2P:
                continue
            size = dtype_bytes(dtype)
            calls.append(_call(coll, pg, counters, int(d.ts[i]), int(d.dur[i]), n,
                               n * size if n >= 0 and size else -1, dtype, group,
                               starts, ends, names, int(c.seq[host[j]]) if len(host) else -1))
    return calls


def _call(coll: str, pg: str, counters: dict[tuple[str, str], int], ts: int, dur: int,
          nelems: int, nbytes: int, dtype: str, group: int, starts: np.ndarray,
          ends: np.ndarray, names: list[str], trace_seq: int = -1) -> Call:
    seq = counters.get((coll, pg), 0)
    counters[(coll, pg)] = seq + 1
    k = int(np.searchsorted(starts, ts, side="right")) - 1
    step = names[k] if k >= 0 and ts < ends[k] else ""
    return Call(coll, pg, seq, ts, dur, nelems, nbytes, dtype, group, step, trace_seq)


def _comm_and_compute(trace: Trace) -> tuple[iv.Union, iv.Union, bool]:
    c = trace.collectives
    rows, on_device = _collective_rows(trace)
    if trace.has_gpu:
        d = trace.device
        kernels = d.kind == DEV_KERNEL
        comm_mask = trace.string_ids(is_collective_kernel)[d.name] & kernels
        if len(rows) and on_device:  # kernels carrying collective args count too
            comm_mask |= np.isin(d.ts, c.ts[rows]) & np.isin(d.name, c.name[rows]) & kernels
        comm = iv.union(d.ts[comm_mask], d.end[comm_mask])
        comp = iv.union(d.ts[kernels & ~comm_mask], d.end[kernels & ~comm_mask])
        return comp, comm, True
    h = trace.host
    ops = h.kind == HOST_OP
    wrappers = trace.string_ids(_is_comm_wrapper)[h.name]
    comp = iv.union(h.ts[ops & ~wrappers], h.end[ops & ~wrappers])
    comm = iv.union(c.ts[rows], c.ts[rows] + c.dur[rows]) if len(rows) else iv.EMPTY
    return comp, comm, False


def _is_comm_wrapper(name: str) -> bool:
    return name.startswith(("c10d::", "record_param_comms", "nccl:", "gloo:")) or name in (
        "torch.distributed.all_reduce", "torch.distributed.broadcast")


TOP_OPS = 15


def _top_ops(trace: Trace, links: Links,
             operators: list[OperatorRow] | None) -> tuple[tuple[str, int], ...]:
    from stepscope.analysis.trace.operators import operator_stats

    rows = operator_stats(trace, links=links) if operators is None else operators
    gpu = trace.has_gpu
    out = []
    for r in rows:
        if _is_comm_wrapper(r.name):
            continue
        ns = round((r.device_self_us if gpu else r.host_self_us) * 1000)
        if ns > 0:
            out.append((r.name, ns))
        if len(out) == TOP_OPS:
            break
    return tuple(out)


def host_pid(trace: Trace) -> str | None:
    """The pid of the process that ran the profiler: the pid of most host events.

    torch.profiler writes host events with the OS pid of the profiled process (device
    events carry the device index instead); DataLoader workers or other processes recorded
    beside it own fewer events than the training loop that ran the steps.
    """
    for table in (trace.host, trace.runtime):
        if len(table):
            ids, counts = np.unique(table.pid, return_counts=True)
            return trace.name(int(ids[int(np.argmax(counts))]))
    return None


def capture_window(trace: Trace) -> tuple[int, int]:
    """The wall-clock span the trace covers (ns): the profiler's own span, else its events;
    plus Kineto's ``baseTimeNanoseconds`` where times are relative to it (each process
    picks its own base, so only the sum compares across traces)."""
    m = trace.meta
    base = m.base_time_ns or 0
    if m.window_start is not None and m.window_end is not None:
        return m.window_start + base, m.window_end + base
    starts = [int(t.ts.min()) for t in (trace.host, trace.device) if len(t)]
    ends = [int(t.end.max()) for t in (trace.host, trace.device) if len(t)]
    return (min(starts) + base, max(ends) + base) if starts else (0, 0)


def rank_summary(trace: Trace, *, links: Links | None = None,
                 operators: list[OperatorRow] | None = None) -> RankSummary:
    """Per-step computation/communication split and the collective calls of one rank.

    ``links`` and ``operators`` (``operator_stats(trace)``), when the caller has them already
    (``Analyses``), are reused instead of being built again.
    """
    from stepscope.analysis.distributed.all_to_all import rank_all_to_all
    from stepscope.analysis.distributed.fsdp import rank_fsdp

    links = links or Links(trace)
    steps = find_steps(trace, links)
    comp, comm, on_device = _comm_and_compute(trace)
    overlap = iv.intersect(comp, comm)
    busy = iv.merge(comp, comm)
    starts = np.array([s.start for s in steps.steps], dtype=np.int64)
    ends = np.array([s.end for s in steps.steps], dtype=np.int64)
    ov = iv.measure_in(overlap, starts, ends)
    cp = iv.measure_in(comp, starts, ends) - ov
    cm = iv.measure_in(comm, starts, ends) - ov
    bz = iv.measure_in(busy, starts, ends)
    names = [s.name for s in steps.steps]
    start, end = capture_window(trace)
    rows = tuple(
        StepComm(names[k], int(starts[k]), int(ends[k]), int(cp[k]), int(ov[k]), int(cm[k]),
                 int(max(ends[k] - starts[k] - bz[k], 0)))
        for k in range(len(names))
    )
    calls = tuple(_calls(trace, starts, ends, names))
    return RankSummary(
        path=trace.meta.path, rank=trace.meta.rank, world_size=trace.meta.world_size,
        backend=trace.meta.backend, on_device=on_device, steps=rows,
        calls=calls, top_ops=_top_ops(trace, links, operators),
        pid=host_pid(trace), start_ns=start, end_ns=end,
        clock_base_ns=trace.meta.base_time_ns or 0,
        pipeline=stage_part(trace, links, starts, ends),
        process_groups=trace.meta.process_groups,
        all_to_all=rank_all_to_all(trace), fsdp=rank_fsdp(trace, calls, comp, starts, ends),
    )
