"""Arrow tables from one trace (or one TensorRT run), built only when a query names them.

The event tables are the model's own numpy columns handed to Arrow without a copy (a
numeric numpy array becomes an Arrow array over the same memory; a trace read from the
cache is memory-mapped Arrow already); names are dictionary arrays whose indices are the
model's string ids over one Arrow copy of the string table, so a name is resolved only
when a query reads it. The analysis tables (steps, modules, findings) run the analyses
they need, once per trace, and only when asked for.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cached_property
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from stepscope.model.tensorrt import TrtRun
from stepscope.model.trace import (
    DEV_KERNEL,
    DEV_MEMCPY,
    DEV_MEMSET,
    HOST_ANNOTATION,
    HOST_OP,
    HOST_PYTHON,
    MEM_ARRAY,
    MEM_DEVICE,
    MEM_MANAGED,
    MEM_PAGEABLE,
    MEM_PINNED,
    NVTX_PUSHPOP,
    NVTX_STARTEND,
    Trace,
)

Columns = dict[str, Any]  # column name -> numpy array or Arrow array

# CUPTI's memcpy kinds (CUpti_ActivityMemcpyKind), as nsys exports them and as Kineto
# spells them in names ("Memcpy HtoD (Pageable -> Device)")
COPY_KINDS = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
              8: "DtoD", 9: "HtoH", 10: "PtoP"}
_COPY_IN_NAME = re.compile(r"\bMemcpy ?([A-Za-z]to[A-Za-z])\b")
# CUPTI's memory kinds (CUpti_ActivityMemoryKind, model.trace.MEM_*): nsys exports them as
# numbers, Kineto spells them in the copy's name ("... (Pageable -> Device)")
MEMORY_KINDS = {MEM_PAGEABLE: "pageable", MEM_PINNED: "pinned", MEM_DEVICE: "device",
                MEM_ARRAY: "array", MEM_MANAGED: "managed"}
_MEMORY_IN_NAME = re.compile(r"\((\w+)(?: Static)? -> (\w+)(?: Static)?\)")
HOST_KINDS = {HOST_OP: "operator", HOST_ANNOTATION: "annotation", HOST_PYTHON: "python"}
DEVICE_KINDS = {DEV_KERNEL: "kernel", DEV_MEMCPY: "memcpy", DEV_MEMSET: "memset"}
NVTX_STYLES = {NVTX_PUSHPOP: "pushpop", NVTX_STARTEND: "startend"}


def _labels(codes: npt.NDArray[Any], labels: dict[int, str]) -> pa.DictionaryArray:
    """Small integer codes as a dictionary array of their labels (unknown codes: NULL)."""
    keys = sorted(labels)
    pos = np.full(max(max(keys), 0) + 2, -1, dtype=np.int32)
    for i, k in enumerate(keys):
        pos[k] = i
    c = codes.astype(np.int64)
    idx = np.where((c >= 0) & (c <= max(keys)), pos[np.clip(c, 0, max(keys))], -1)
    idx = idx.astype(np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(idx, mask=idx < 0),
                                          pa.array([labels[k] for k in keys], pa.string()))


def _null_below_zero(values: npt.NDArray[Any]) -> pa.Array:
    return pa.array(values, mask=values < 0)


class TraceTables:
    """The tables of one trace; each built on first use."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace

    @cached_property
    def strings(self) -> pa.Array:
        return pa.array(self.trace.strings, pa.string())

    @cached_property
    def origin_ns(self) -> int:
        """The trace's first event: where the µs columns start (0 for an empty trace)."""
        firsts = [int(t.ts.min()) for t in (self.trace.host, self.trace.runtime,
                                            self.trace.device, self.trace.nvtx) if len(t)]
        return min(firsts) if firsts else 0

    def names(self, ids: npt.NDArray[np.int32]) -> pa.DictionaryArray:
        """String ids as a dictionary array over the string table (-1: NULL)."""
        ids = np.asarray(ids, dtype=np.int32)
        missing = ids < 0
        indices = pa.array(ids, mask=missing) if missing.any() else pa.array(ids)
        return pa.DictionaryArray.from_arrays(indices, self.strings)

    @cached_property
    def links(self) -> Any:
        from stepscope.analysis.events.links import Links

        return Links(self.trace)

    @cached_property
    def analyses(self) -> Any:
        from stepscope.analysis.suite import run_analyses

        return run_analyses(self.trace)

    # ------------------------------------------------------------ event tables

    def host_ops(self) -> Columns:
        h = self.trace.host
        return {"id": np.arange(len(h), dtype=np.int64), "name": self.names(h.name),
                "kind": _labels(h.kind, HOST_KINDS), "ts_ns": h.ts, "dur_ns": h.dur,
                "pid": self.names(h.pid), "tid": self.names(h.tid),
                "external_id": h.external_id, "input_dims": self.names(h.input_dims),
                "input_types": self.names(h.input_types),
                "input_strides": self.names(h.input_strides),
                "concrete_inputs": self.names(h.concrete_inputs),
                "call_stack": self.names(h.call_stack)}

    def runtime(self) -> Columns:
        r = self.trace.runtime
        return {"id": np.arange(len(r), dtype=np.int64), "name": self.names(r.name),
                "ts_ns": r.ts, "dur_ns": r.dur, "pid": self.names(r.pid),
                "tid": self.names(r.tid), "correlation": r.correlation,
                "external_id": r.external_id}

    def _device(self, kind: int) -> tuple[npt.NDArray[np.int64], Columns]:
        d = self.trace.device
        rows = np.flatnonzero(d.kind == kind)
        every = len(rows) == len(d)

        def take(a: npt.NDArray[Any]) -> npt.NDArray[Any]:
            return a if every else a[rows]

        cols: Columns = {"id": rows.astype(np.int64), "name": self.names(take(d.name)),
                         "ts_ns": take(d.ts), "dur_ns": take(d.dur), "device": take(d.device),
                         "stream": take(d.stream), "correlation": take(d.correlation),
                         "external_id": take(d.external_id)}
        return rows, cols

    def kernels(self) -> Columns:
        d = self.trace.device
        rows, cols = self._device(DEV_KERNEL)
        every = len(rows) == len(d)
        for name in ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                     "registers", "shared_mem", "blocks_per_sm", "occupancy_pct"):
            a = getattr(d, name)
            cols[name] = a if every else a[rows]
        return cols

    def memcpy(self) -> Columns:
        d = self.trace.device
        rows, cols = self._device(DEV_MEMCPY)
        cols["bytes"] = d.bytes[rows]
        details = self.trace.device_details
        if len(details) == len(d) and len(d):  # nsys: CUPTI's numbers
            kind = details.copy_kind[rows].astype(np.int64)
            src = details.src_kind[rows].astype(np.int64)
            dst = details.dst_kind[rows].astype(np.int64)
        else:  # Kineto: the kinds are spelled in the name, once per distinct name
            kind, src, dst = (self._by_name(d.name[rows], table) for table in range(3))
        cols["copy_kind"] = _labels(kind, COPY_KINDS)
        cols["src_memory"] = _labels(src, MEMORY_KINDS)
        cols["dst_memory"] = _labels(dst, MEMORY_KINDS)
        return cols

    @cached_property
    def _copy_codes(self) -> npt.NDArray[np.int64]:
        """Per string id: (copy kind, source memory, destination memory) from a Kineto
        copy name, -1 where the name does not say."""
        copy = {v: k for k, v in COPY_KINDS.items()}
        memory = {v: k for k, v in MEMORY_KINDS.items()}
        codes = np.full((max(len(self.trace.strings), 1), 3), -1, dtype=np.int64)
        for i, s in enumerate(self.trace.strings):
            if not s.startswith("Memcpy"):
                continue
            if m := _COPY_IN_NAME.search(s):
                codes[i, 0] = copy.get(m.group(1), -1)
            if m := _MEMORY_IN_NAME.search(s):
                codes[i, 1] = memory.get(m.group(1).lower(), -1)
                codes[i, 2] = memory.get(m.group(2).lower(), -1)
        return codes

    def _by_name(self, ids: npt.NDArray[np.int32], which: int) -> npt.NDArray[np.int64]:
        codes = self._copy_codes[np.maximum(ids, 0), which]
        return np.where(ids >= 0, codes, -1)

    def memset(self) -> Columns:
        rows, cols = self._device(DEV_MEMSET)
        cols["bytes"] = self.trace.device.bytes[rows]
        return cols

    def links_(self) -> Columns:
        d = self.trace.device
        runtime = self.links.device_runtime
        op = self.links.device_host
        rt_name = np.where(runtime >= 0, self.trace.runtime.name[np.maximum(runtime, 0)], -1)
        op_name = np.where(op >= 0, self.trace.host.name[np.maximum(op, 0)], -1)
        return {"device_op_id": np.arange(len(d), dtype=np.int64),
                "device_kind": _labels(d.kind, DEVICE_KINDS), "device_op": self.names(d.name),
                "runtime_id": _null_below_zero(runtime), "runtime": self.names(rt_name),
                "op_id": _null_below_zero(op), "op": self.names(op_name)}

    def memory(self) -> Columns:
        m = self.trace.memory
        return {"ts_ns": m.ts, "device_type": m.device_type, "device_id": m.device_id,
                "bytes": m.bytes, "addr": m.addr, "total_allocated": m.total_allocated,
                "total_reserved": m.total_reserved, "tid": self.names(m.tid)}

    def collectives(self) -> Columns:
        c = self.trace.collectives
        return {"ts_ns": c.ts, "dur_ns": c.dur, "on_device": c.on_device.astype(bool),
                "name": self.names(c.name), "collective": self.names(c.collective),
                "in_nelems": c.in_nelems, "out_nelems": c.out_nelems,
                "dtype": self.names(c.dtype), "group_size": c.group_size,
                "process_group": self.names(c.pg), "seq": _null_below_zero(c.seq)}

    def syncs(self) -> Columns:
        s = self.trace.syncs
        return {"name": self.names(s.name), "ts_ns": s.ts, "dur_ns": s.dur,
                "device": s.device, "stream": s.stream, "correlation": s.correlation}

    def nvtx(self) -> Columns:
        n = self.trace.nvtx
        return {"name": self.names(n.name), "ts_ns": n.ts, "dur_ns": n.dur,
                "pid": self.names(n.pid), "tid": self.names(n.tid),
                "domain": self.names(n.domain), "style": _labels(n.style, NVTX_STYLES),
                "payload": pa.array(n.payload, from_pandas=True)}  # NaN -> NULL

    def devices(self) -> Columns:
        ds = self.trace.meta.devices
        return {"id": pa.array([d.id for d in ds], pa.int32()),
                "name": pa.array([d.name for d in ds], pa.string()),
                "total_memory": pa.array([d.total_memory for d in ds], pa.int64()),
                "compute_capability": pa.array([f"{d.compute_major}.{d.compute_minor}"
                                                for d in ds], pa.string()),
                "num_sms": pa.array([d.num_sms for d in ds], pa.int32()),
                "max_threads_per_sm": pa.array([d.max_threads_per_sm for d in ds], pa.int32()),
                "warp_size": pa.array([d.warp_size for d in ds], pa.int32()),
                "clock_hz": pa.array([d.clock_hz for d in ds], pa.int64()),
                "memory_bandwidth": pa.array([d.memory_bandwidth for d in ds], pa.int64())}

    # ------------------------------------------------------------ analysis tables

    def steps(self) -> Columns:
        from stepscope.analysis.events.steps import find_steps
        from stepscope.analysis.events.warmup import find_warmup

        found = find_steps(self.trace, self.links)
        warm = find_warmup(self.trace, found, self.links)
        dropped = set(warm.dropped_steps) if warm is not None else set()
        s = found.steps
        return {"step": pa.array([x.name for x in s], pa.string()),
                "start_ns": pa.array([x.start for x in s], pa.int64()),
                "end_ns": pa.array([x.end for x in s], pa.int64()),
                "host_start_ns": pa.array([x.host_start for x in s], pa.int64()),
                "host_end_ns": pa.array([x.host_end for x in s], pa.int64()),
                "device_ops": pa.array([x.device_ops for x in s], pa.int64()),
                "warmup": pa.array([x.name in dropped for x in s], pa.bool_())}

    def modules(self) -> Columns:
        from stepscope.analysis.events.optree import OpTree
        from stepscope.analysis.trace.modules import module_analysis

        nodes = module_analysis(self.trace, self.links, OpTree(self.trace, self.links)).nodes
        us = 1e-3
        return {"id": pa.array([n.id for n in nodes], pa.int64()),
                "parent_id": pa.array([n.parent if n.parent >= 0 else None for n in nodes],
                                      pa.int64()),
                "name": pa.array([n.name for n in nodes], pa.string()),
                "path": pa.array([n.path for n in nodes], pa.string()),
                "depth": pa.array([n.depth for n in nodes], pa.int32()),
                "calls": pa.array([n.calls for n in nodes], pa.int64()),
                "host_total_us": pa.array([n.host_total_ns * us for n in nodes], pa.float64()),
                "host_self_us": pa.array([n.host_self_ns * us for n in nodes], pa.float64()),
                "device_total_us": pa.array([n.device_total_ns * us for n in nodes],
                                            pa.float64()),
                "device_self_us": pa.array([n.device_self_ns * us for n in nodes], pa.float64()),
                "max_call_us": pa.array([n.max_call_ns * us for n in nodes], pa.float64())}

    def findings(self) -> Columns:
        from stepscope.advice import advise

        return findings_columns(advise(self.analyses))

    BUILDERS: ClassVar[dict[str, Callable[[TraceTables], Columns]]] = {
        "host_ops": host_ops, "runtime": runtime, "kernels": kernels, "memcpy": memcpy,
        "memset": memset, "links": links_, "steps": steps, "memory": memory,
        "modules": modules, "devices": devices, "collectives": collectives, "syncs": syncs,
        "findings": findings, "nvtx": nvtx,
    }

    def build(self, table: str) -> Columns:
        return self.BUILDERS[table](self)


def findings_columns(findings: list[Any]) -> Columns:
    return {"id": pa.array([f.id for f in findings], pa.string()),
            "title": pa.array([f.title for f in findings], pa.string()),
            "severity": pa.array([f.severity for f in findings], pa.string()),
            "saving_us": pa.array([float(f.saving_us) for f in findings], pa.float64()),
            "saving_pct": pa.array([float(f.saving_pct) for f in findings], pa.float64()),
            "estimate": pa.array([f.estimate for f in findings], pa.string()),
            "fix": pa.array([f.fix for f in findings], pa.string()),
            "evidence": pa.array([list(f.evidence) for f in findings], pa.list_(pa.string()))}


class EngineTables:
    """The tables of one TensorRT engine's trtexec outputs."""

    def __init__(self, run: TrtRun) -> None:
        from stepscope.analysis.tensorrt.engine import analyse_tensorrt

        self.run = run
        self.analysis = analyse_tensorrt(run)

    origin_ns = 0

    def build(self, table: str) -> Columns:
        if table == "findings":
            from stepscope.advice.tensorrt import advise_tensorrt

            return findings_columns(advise_tensorrt(self.analysis))
        rows = self.analysis.layers

        def us(v: float | None) -> float | None:
            return None if v is None else v * 1e3

        return {"idx": pa.array([r.index for r in rows], pa.int32()),
                "name": pa.array([r.name for r in rows], pa.string()),
                "type": pa.array([r.layer_type for r in rows], pa.string()),
                "average_us": pa.array([us(r.average_ms) for r in rows], pa.float64()),
                "median_us": pa.array([us(r.median_ms) for r in rows], pa.float64()),
                "total_ms": pa.array([r.time_ms for r in rows], pa.float64()),
                "share_pct": pa.array([r.share_pct for r in rows], pa.float64()),
                "calls": pa.array([r.calls for r in rows], pa.int64()),
                "precision": pa.array([r.precision for r in rows], pa.string()),
                "tactic": pa.array([r.tactic for r in rows], pa.string()),
                "reformat": pa.array([r.is_reformat for r in rows], pa.bool_())}
