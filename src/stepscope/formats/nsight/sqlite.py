"""Nsight Systems SQLite exports (``nsys export --type sqlite``) -> ``model.Trace``.

Every table is read with one SQL query whose rows stream into a numpy structured array
(``np.fromiter`` over the cursor, preallocated from ``count(*)``: no Python loop per row);
NULLs become defaults in SQL (``coalesce``); pids, tids, correlation ids and the time
order are computed in numpy, which is cheaper than SQL expressions through sqlite3.
Strings stay interned: name columns are ids into ``StringIds``, whose values become the
first entries of ``Trace.strings``; strings we make (memcpy labels, pids, prefixed NVTX
names) are appended once per distinct value.

Mapping to the model (docs/metrics.md "Nsight Systems"):
* kernels, memcpys, memsets -> ``device`` (+ row-aligned ``device_details``: memory kinds,
  copy kind, mangled name); memcpy/memset names follow Kineto ("Memcpy HtoD (Pageable ->
  Device)") so every analysis and rule reads them alike;
* CUDA runtime and driver calls -> ``runtime`` with the version suffix dropped
  (``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel``), correlation ids made unique per
  process (``pid << 32 | correlationId``, CUPTI numbers them per process);
* synchronisation events -> ``syncs``; NVTX push/pop and start/end ranges -> ``nvtx`` and,
  as user annotations, ``host`` (so the operator tree, gaps and steps see them); NVTX
  ranges named like steps (``ProfilerStep#3``, ``step 3``, ``iteration_3``) become the
  host annotation ``ProfilerStep#N`` that the step analysis looks for;
* OS runtime calls -> ``osrt``; ``TARGET_INFO_GPU`` -> ``meta.devices``.
"""

from __future__ import annotations

import math
import os
import re
import sqlite3
from collections import Counter
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError, TraceSourceError, one_line
from stepscope.formats.nsight.demangle import demangle_all, is_mangled
from stepscope.formats.nsight.occupancy import estimated_occupancy
from stepscope.formats.nsight.schema import GPU_TABLES, META_TABLES, STRING_TABLES, Schema
from stepscope.io.source import sqlite_uri
from stepscope.model.trace import (
    DEV_KERNEL,
    DEV_MEMCPY,
    DEV_MEMSET,
    HOST_ANNOTATION,
    NVTX_PUSHPOP,
    NVTX_STARTEND,
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

READER_VERSION = "nsys-2"  # 2: unknown name ids unnamed, malformed descriptive cells tolerated
# CUDA ordinals are small (one per GPU of the node); a TARGET_INFO_GPU id past this is not a
# device id (a corrupt cell) and would size per-device tables
MAX_DEVICE_ID = 1 << 16

KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
MEMCPY = "CUPTI_ACTIVITY_KIND_MEMCPY"
MEMSET = "CUPTI_ACTIVITY_KIND_MEMSET"
RUNTIME = "CUPTI_ACTIVITY_KIND_RUNTIME"
SYNC = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"
NVTX = "NVTX_EVENTS"
OSRT = "OSRT_API"

# CUPTI enums (identical in every schema version seen; docs/metrics.md)
COPY_KINDS = {1: "HtoD", 2: "DtoH", 3: "HtoA", 4: "AtoH", 5: "AtoA", 6: "AtoD", 7: "DtoA",
              8: "DtoD", 9: "HtoH", 10: "PtoP", 11: "HtoD", 12: "DtoH", 13: "DtoD"}
MEM_KINDS = {0: "Pageable", 1: "Pinned", 2: "Device", 3: "Array", 4: "Managed",
             5: "Device Static", 6: "Managed Static", 7: "Unknown"}
SYNC_TYPES = {0: "Unknown", 1: "Event Sync", 2: "Stream Wait Event", 3: "Stream Sync",
              4: "Context Sync"}
NVTX_TYPES = {59: NVTX_PUSHPOP, 70: NVTX_PUSHPOP, 60: NVTX_STARTEND, 71: NVTX_STARTEND}
NVTX_DOMAIN_CREATE = 75
_VERSION_SUFFIX = re.compile(r"_v\d+$")
_STEP = re.compile(
    r"^(?:ProfilerStep#|(?:train(?:ing)?[ _-]?)?(?:step|iter|iteration)[ _#:-]*)(\d+)$",
    re.IGNORECASE,
)

I64 = npt.NDArray[np.int64]


def api_base_name(name: str) -> str:
    """``cudaLaunchKernel_v7000`` -> ``cudaLaunchKernel`` (nsys stats shows it so)."""
    return _VERSION_SUFFIX.sub("", name)


def step_label(range_name: str) -> str | None:
    """The N of an NVTX range that marks a training step, else None."""
    m = _STEP.match(range_name.rsplit(":", 1)[-1].strip())
    return m.group(1) if m else None


class _Strings:
    """The trace's string table: StringIds first (same ids), then our own, interned."""

    def __init__(self, base: list[str]) -> None:
        self.values = base
        self.base = len(base)
        self.index: dict[str, int] = {}
        self.unknown = 0  # name ids the export does not hold in StringIds

    def checked(self, ids: I64) -> I64:
        """``ids`` with every id that is not a StringIds entry made -1 (unnamed), counted:
        ids index the string table, so one that does not exist must never reach it."""
        bad = (ids >= self.base) | (ids < -1)
        if bad.any():
            self.unknown += int(bad.sum())
            ids = np.where(bad, -1, ids)
        return ids

    def add(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.values)
            self.values.append(s)
        return i

    def remap(self, ids: I64, fn: Any) -> npt.NDArray[np.int32]:
        """Map string ids through ``fn(str) -> str``, once per distinct id."""
        n = len(self.values)
        uniq, inv = _distinct(ids, n)
        new = np.array([self.add(fn(self.values[i])) if 0 <= i < n else -1
                        for i in uniq.tolist()], dtype=np.int32)
        return new[inv] if len(ids) else np.empty(0, np.int32)

    def of_ints(self, values: I64) -> npt.NDArray[np.int32]:
        """String ids of the decimal text of each integer (pids, tids)."""
        uniq, inv = _distinct(values, 1 << 24)
        new = np.array([self.add(str(v)) for v in uniq.tolist()], dtype=np.int32)
        return new[inv] if len(values) else np.empty(0, np.int32)


def _distinct(values: I64, bound: int) -> tuple[I64, I64]:
    """(distinct values, index of each value among them), like ``np.unique`` with
    ``return_inverse``, in O(n) when all values lie in [0, bound) (string ids, pids,
    tids: a presence table instead of a sort of millions of rows)."""
    if len(values) == 0:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    lo, hi = int(values.min()), int(values.max())
    if lo == hi:
        return np.array([lo], np.int64), np.zeros(len(values), np.int64)
    if lo >= 0 and hi < bound:
        seen = np.zeros(hi + 1, bool)
        seen[values] = True
        uniq = np.flatnonzero(seen)
        pos = np.zeros(hi + 1, np.int64)
        pos[uniq] = np.arange(len(uniq))
        return uniq.astype(np.int64), pos[values]
    uniq, inv = np.unique(values, return_inverse=True)
    return uniq, inv.reshape(-1)


# ns: a start or end this far from the session's clock origin (~73 years) is no record
# of a run but a corrupt cell; kept, times near int64's limits overflow every difference
# and packed key taken of them (the Kineto reader bounds its times the same way)
MAX_TIME_NS = 1 << 61


def _query(con: sqlite3.Connection, sql: str, dtype: list[tuple[str, Any]],
           count: int = -1, *, dropped: Counter[str], table: str) -> np.ndarray[Any, Any]:
    """Rows of ``sql`` as a structured array (``count``: the row count when known, so that
    a multi-GB array is allocated once instead of grown and copied); rows whose start or
    end lies beyond ``MAX_TIME_NS`` are left out and counted in ``dropped[table]``."""
    try:
        cur = con.execute(sql)
        rows = np.fromiter(cur, dtype=np.dtype(dtype), count=count)
    except (sqlite3.Error, ValueError, TypeError, OverflowError) as exc:
        raise TraceFormatError(f"cannot read the export ({type(exc).__name__}: {exc})") from None
    if len(rows) and {"ts", "end"} <= set(rows.dtype.names or ()):
        ts, end = rows["ts"], rows["end"]
        corrupt = (ts >= MAX_TIME_NS) | (ts <= -MAX_TIME_NS) | (end >= MAX_TIME_NS) | (
            end <= -MAX_TIME_NS)
        if corrupt.any():
            rows = rows[~corrupt]
            dropped[table] += int(corrupt.sum())
    return rows


def _read_strings(con: sqlite3.Connection, schema: Schema) -> list[str]:
    table = schema.first(STRING_TABLES)
    if table is None:
        return []
    rows = [(i, v) for i, v in con.execute(f"SELECT id, value FROM {table}")
            if isinstance(i, int)]  # a non-integer id names nothing: that row is ignored
    if not rows:
        return []
    top = max(r[0] for r in rows)
    if top > 4 * len(rows) + 1_000_000:  # ids are dense (0..n-1) in every export seen
        raise TraceFormatError(f"{table}: string ids are not dense (max id {top:,} for "
                               f"{len(rows):,} strings)")
    out = [""] * (top + 1)
    for i, v in rows:  # one Python step per distinct string, not per event
        if i >= 0:
            out[i] = "" if v is None else v.decode("utf-8", "replace") \
                if isinstance(v, bytes) else str(v)
    return out


def _meta(con: sqlite3.Connection, schema: Schema) -> dict[str, str]:
    table = schema.first(META_TABLES)
    if table is None:
        return {}
    return {str(k): str(v) for k, v in con.execute(f"SELECT name, value FROM {table}")}


DIAGNOSTIC_WARNING = 2  # ENUM_DIAGNOSTIC_SEVERITY_LEVEL: 2 Warning, 3 Error


def _window(con: sqlite3.Connection, schema: Schema) -> tuple[int | None, int | None]:
    """The captured time range (ANALYSIS_DETAILS startTime/stopTime), when exported."""
    table = "ANALYSIS_DETAILS"
    if not schema.has(table) or not {"startTime", "stopTime"} <= schema.tables[table]:
        return None, None
    row = con.execute(f"SELECT min(startTime), max(stopTime) FROM {table}").fetchone()
    if row is None or not all(isinstance(v, int) for v in row):
        return None, None  # only reported: a malformed window is left out, never fatal
    return int(row[0]), int(row[1])


def _diagnostics(con: sqlite3.Connection, schema: Schema) -> tuple[str, ...]:
    """nsys' own warnings and errors (2024.6+), distinct, most frequent first."""
    table = "DIAGNOSTIC_EVENT"
    if not schema.has(table) or not {"text", "severity"} <= schema.tables[table]:
        return ()
    rows = con.execute(f"SELECT severity, text, count(*) AS n FROM {table} WHERE severity >= "
                       f"{DIAGNOSTIC_WARNING} AND text IS NOT NULL GROUP BY severity, text "
                       "ORDER BY n DESC, text LIMIT 20").fetchall()
    return tuple(f"{'error' if _int(sev, 3) >= 3 else 'warning'}: {one_line(str(text), 200)}"
                 + (f" (x{n})" if n > 1 else "") for sev, text, n in rows)


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _int(value: Any, default: int) -> int:
    """An integer cell, or ``default`` for anything else (text, a blob, NULL, a float that
    is not finite): the columns read this way are descriptive and never reject an export."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return default
    return default


def _devices(con: sqlite3.Connection, schema: Schema) -> tuple[DeviceProperties, ...]:
    table = schema.first(GPU_TABLES)
    if table is None:
        return ()
    c = schema.col
    # TARGET_INFO_CUDA_DEVICE maps TARGET_INFO_GPU.id to the CUDA ordinal kernels carry.
    cuda_of: dict[int, int] = {}
    if schema.has("TARGET_INFO_CUDA_DEVICE"):
        dev = "TARGET_INFO_CUDA_DEVICE"
        for gpu, cuda in con.execute(
            f"SELECT DISTINCT {c(dev, 'gpuId')}, {c(dev, 'cudaId')} FROM {dev}"
        ):
            if isinstance(gpu, int) and isinstance(cuda, int):
                cuda_of.setdefault(gpu, cuda)
    sql = (
        f"SELECT {c(table, 'id', default='0')}, {c(table, 'name', default=repr(''))}, "
        f"{c(table, 'totalMemory', 'globalMemorySize', default='0')}, "
        f"{c(table, 'computeMajor', 'computeCapabilityMajor', 'smMajor', default='0')}, "
        f"{c(table, 'computeMinor', 'computeCapabilityMinor', 'smMinor', default='0')}, "
        f"{c(table, 'smCount', 'multiProcessorCount', 'numMultiprocessors', default='0')}, "
        f"{c(table, 'maxWarpsPerSm', default='0')}, {c(table, 'threadsPerWarp', default='32')}, "
        f"{c(table, 'clockRate', default='0')}, {c(table, 'memoryBandwidth', default='0')}, "
        f"{c(table, 'l2CacheSize', default='0')}, {c(table, 'maxBlocksPerSm', default='0')}, "
        f"{c(table, 'maxRegistersPerSm', default='0')}, {c(table, 'maxShmemPerSm', default='0')}, "
        f"{c(table, 'cuDevice', default='-1')} FROM {table}"
    )
    out = []
    seen: set[int] = set()
    for row in con.execute(sql):
        gid, name, mem, major, minor, sms, warps, warp, clock, bw, l2, blocks, regs, shm, cu = row
        gid, cu = _int(gid, -1), _int(cu, -1)
        did = cuda_of.get(gid, cu if cu >= 0 else gid)
        if did in seen or not 0 <= did < MAX_DEVICE_ID:
            continue  # a device without a usable id cannot be matched to its kernels
        seen.add(did)
        warps, warp = _int(warps, 0), _int(warp, 32)
        out.append(DeviceProperties(
            id=did, name=name.decode("utf-8", "replace") if isinstance(name, bytes)
            else str(name), total_memory=_int(mem, 0), compute_major=_int(major, 0),
            compute_minor=_int(minor, 0), num_sms=_int(sms, 0),
            max_threads_per_sm=warps * warp, warp_size=warp, clock_hz=_int(clock, 0),
            memory_bandwidth=_int(bw, 0), l2_cache_bytes=_int(l2, 0), max_warps_per_sm=warps,
            max_blocks_per_sm=_int(blocks, 0), max_registers_per_sm=_int(regs, 0),
            max_shared_memory_per_sm=_int(shm, 0),
        ))
    return tuple(out)


# Columns read per table: (field, candidate column names, default, dtype)
Spec = list[tuple[str, tuple[str, ...], str, str]]
_COMMON: Spec = [("ts", ("start",), "0", "i8"), ("end", ("end",), "0", "i8"),
           ("device", ("deviceId",), "0", "i4"), ("stream", ("streamId",), "-1", "i8"),
           ("corr", ("correlationId",), "-1", "i8"), ("gpid", ("globalPid",), "0", "i8")]
_KERNEL: Spec = [("name", ("demangledName", "name", "shortName"), "-1", "i8"),
           ("mangled", ("mangledName",), "-1", "i8"),
           ("regs", ("registersPerThread",), "-1", "i4"), ("gx", ("gridX",), "-1", "i4"),
           ("gy", ("gridY",), "-1", "i4"), ("gz", ("gridZ",), "-1", "i4"),
           ("bx", ("blockX",), "-1", "i4"), ("by", ("blockY",), "-1", "i4"),
           ("bz", ("blockZ",), "-1", "i4"), ("sshm", ("staticSharedMemory",), "0", "i8"),
           ("dshm", ("dynamicSharedMemory",), "0", "i8")]
_MEMCPY: Spec = [("bytes", ("bytes",), "0", "i8"), ("copy", ("copyKind",), "0", "i1"),
           ("src", ("srcKind",), "7", "i1"), ("dst", ("dstKind",), "7", "i1")]
_MEMSET: Spec = [("bytes", ("bytes",), "0", "i8"), ("dst", ("memKind",), "7", "i1")]
_FILL = {"name": -1, "mangled": -1, "regs": -1, "gx": -1, "gy": -1, "gz": -1, "bx": -1,
         "by": -1, "bz": -1, "sshm": 0, "dshm": 0, "bytes": -1, "copy": -1, "src": -1,
         "dst": -1}
_DTYPES = {f: d for f, _, _, d in _COMMON + _KERNEL + _MEMCPY + _MEMSET}


def _read_table(con: sqlite3.Connection, schema: Schema, table: str,
                spec: Spec, dropped: Counter[str]) -> np.ndarray[Any, Any]:
    """Rows of ``table`` as a structured array; absent columns read as their default.

    No ORDER BY and no arithmetic in SQL: the sqlite3 module's per-value conversion is the
    bottleneck, so everything not needed in SQL is left to numpy.
    """
    cols = ", ".join(schema.col(table, *names, default=d) for _, names, d, _ in spec)
    try:
        count = int(con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.Error as exc:
        raise TraceFormatError(f"cannot read {table} ({exc})") from None
    return _query(con, f"SELECT {cols} FROM {table}", [(f, d) for f, _, _, d in spec], count,
                  dropped=dropped, table=table)


def pid_of(global_id: I64) -> I64:
    return (global_id >> 24) & 0xFFFFFF


def unique_correlation(pid: I64, corr: I64) -> I64:
    """CUPTI correlation ids are per process: ``pid << 32 | id`` (-1 stays -1)."""
    out: I64 = np.where(corr < 0, -1, (pid << 32) | (corr & 0xFFFFFFFF))
    return out


def _device(con: sqlite3.Connection, schema: Schema, strings: _Strings,
            devices: tuple[DeviceProperties, ...],
            dropped: Counter[str]) -> tuple[DeviceOps, DeviceDetails]:
    parts: list[dict[str, np.ndarray[Any, Any]]] = []
    kinds = []
    for table, kind, extra in ((KERNEL, DEV_KERNEL, _KERNEL), (MEMCPY, DEV_MEMCPY, _MEMCPY),
                               (MEMSET, DEV_MEMSET, _MEMSET)):
        if schema.has(table):
            arr = _read_table(con, schema, table, _COMMON + extra, dropped)
            n = len(arr)
            cols = {f: arr[f] for f in arr.dtype.names or ()}
            for f, fill in _FILL.items():
                if f not in cols:
                    cols[f] = np.full(n, fill, _DTYPES[f])
            parts.append(cols)
            kinds.append(np.full(n, kind, np.int8))
    if not parts:
        parts = [{f: np.empty(0, d) for f, d in _DTYPES.items()}]
        kinds = [np.empty(0, np.int8)]
    ts = np.concatenate([p["ts"] for p in parts])
    end = np.concatenate([p["end"] for p in parts])
    if len(ts) < 2 or (np.diff(ts) > 0).all():  # one table already in time order: no sort
        a = {f: np.concatenate([p[f] for p in parts]) for f in _DTYPES}
        kind_col = np.concatenate(kinds)
    else:
        order = np.lexsort((end, ts))
        a = {f: np.concatenate([p[f] for p in parts])[order] for f in _DTYPES}
        kind_col = np.concatenate(kinds)[order]
    del parts
    pid = pid_of(a["gpid"])
    a["corr"] = unique_correlation(pid, a["corr"])
    a["shm"] = a["sshm"] + a["dshm"]
    names = strings.checked(a["name"])
    mangled = strings.checked(a["mangled"])
    kern = kind_col == DEV_KERNEL
    names, mangled = _kernel_names(strings, names, mangled, kern)
    # memcpy/memset labels in Kineto's spelling, one string per distinct kind combination
    mem = ~kern
    if mem.any():
        key = (kind_col[mem].astype(np.int64) * 1_000_000 + (a["copy"][mem].astype(np.int64) + 1)
               * 10_000 + (a["src"][mem].astype(np.int64) + 1) * 100 + a["dst"][mem] + 1)
        uniq, inv = np.unique(key, return_inverse=True)
        ids = np.array([strings.add(_mem_label(int(k))) for k in uniq.tolist()], np.int64)
        names[mem] = ids[inv.reshape(-1)]
    dur = np.maximum(a["end"] - a["ts"], 0)
    shm = a["shm"]
    bps, occ = estimated_occupancy(
        devices, a["device"], a["gx"].astype(np.int64) * a["gy"] * a["gz"],
        a["bx"].astype(np.int64) * a["by"] * a["bz"], a["regs"], shm, kern)
    device = DeviceOps.from_columns({
        "name": names, "ts": a["ts"], "dur": dur, "kind": kind_col, "device": a["device"],
        "stream": a["stream"], "correlation": a["corr"],
        "external_id": np.full(len(ts), -1, np.int64), "blocks_per_sm": bps,
        "occupancy_pct": occ, "grid_x": a["gx"], "grid_y": a["gy"], "grid_z": a["gz"],
        "block_x": a["bx"], "block_y": a["by"], "block_z": a["bz"], "registers": a["regs"],
        "shared_mem": np.where(kern, shm, -1), "bytes": a["bytes"],
    })
    details = DeviceDetails.from_columns({
        "copy_kind": a["copy"], "src_kind": a["src"], "dst_kind": a["dst"],
        "mangled": mangled, "pid": strings.of_ints(pid),
    })
    return device, details


def _mem_label(key: int) -> str:
    kind, rest = divmod(key, 1_000_000)
    copy, rest = divmod(rest, 10_000)
    src, dst = divmod(rest, 100)
    copy, src, dst = copy - 1, src - 1, dst - 1
    if kind == DEV_MEMSET:
        return f"Memset ({MEM_KINDS.get(dst, 'Unknown')})"
    return (f"Memcpy {COPY_KINDS.get(copy, 'Unknown')} "
            f"({MEM_KINDS.get(src, 'Unknown')} -> {MEM_KINDS.get(dst, 'Unknown')})")


def _kernel_names(strings: _Strings, names: I64, mangled: I64,
                  kern: npt.NDArray[np.bool_]) -> tuple[I64, I64]:
    """Kernel names demangled (nsys usually stores them so), mangled ids kept."""
    uniq, _ = _distinct(names[kern & (names >= 0)], len(strings.values))
    vals = [strings.values[i] if i < len(strings.values) else "" for i in uniq.tolist()]
    todo = [k for k, v in enumerate(vals) if is_mangled(v)]
    if todo:
        done = demangle_all([vals[k] for k in todo])
        remap = np.arange(len(strings.values), dtype=np.int64)
        for k, d in zip(todo, done, strict=True):
            remap[uniq[k]] = strings.add(d)
        # names stored mangled keep their mangled id in the mangled column
        was = kern & (names >= 0) & (mangled < 0)
        mangled = np.where(was & (remap[np.maximum(names, 0)] != names), names, mangled)
        names = np.where(names >= 0, remap[np.maximum(names, 0)], names)
    return names, mangled


_RUNTIME: Spec = [("ts", ("start",), "0", "i8"), ("end", ("end",), "0", "i8"),
            ("gtid", ("globalTid",), "0", "i8"), ("corr", ("correlationId",), "-1", "i8"),
            ("name", ("nameId", "name"), "-1", "i8")]


def _sorted(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Rows in time order (sorted in numpy: cheaper than ORDER BY through sqlite3)."""
    if len(a) and not ((np.diff(a["ts"]) >= 0).all()):
        a = a[np.lexsort((a["end"], a["ts"]))]
    return a


def _runtime(con: sqlite3.Connection, schema: Schema, strings: _Strings,
             dropped: Counter[str]) -> Runtimes:
    if not schema.has(RUNTIME):
        a = np.empty(0, np.dtype([(f, d) for f, _, _, d in _RUNTIME]))
    else:
        a = _sorted(_read_table(con, schema, RUNTIME, _RUNTIME, dropped))
    pid = pid_of(a["gtid"])
    a_corr = unique_correlation(pid, a["corr"])
    return Runtimes.from_columns({
        "name": strings.remap(a["name"], api_base_name), "ts": a["ts"],
        "dur": np.maximum(a["end"] - a["ts"], 0), "pid": strings.of_ints(pid),
        "tid": strings.of_ints(a["gtid"] & 0xFFFFFF), "correlation": a_corr,
        "external_id": np.full(len(a), -1, np.int64),
    })


_SYNC: Spec = [("ts", ("start",), "0", "i8"), ("end", ("end",), "0", "i8"),
         ("device", ("deviceId",), "0", "i4"), ("stream", ("streamId",), "-1", "i8"),
         ("corr", ("correlationId",), "-1", "i8"), ("gpid", ("globalPid",), "0", "i8"),
         ("type", ("syncType",), "0", "i8")]


def _syncs(con: sqlite3.Connection, schema: Schema, strings: _Strings,
           dropped: Counter[str]) -> Syncs:
    if not schema.has(SYNC):
        a = np.empty(0, np.dtype([(f, d) for f, _, _, d in _SYNC]))
    else:
        a = _sorted(_read_table(con, schema, SYNC, _SYNC, dropped))
    corr = unique_correlation(pid_of(a["gpid"]), a["corr"])
    uniq, inv = np.unique(a["type"], return_inverse=True)
    ids = np.array([strings.add(SYNC_TYPES.get(t, "Unknown")) for t in uniq.tolist()], np.int32)
    return Syncs.from_columns({
        "name": ids[inv.reshape(-1)] if len(a) else np.empty(0, np.int32), "ts": a["ts"],
        "dur": np.maximum(a["end"] - a["ts"], 0), "device": a["device"], "stream": a["stream"],
        "correlation": corr,
    })


NO_PAYLOAD = -1.0e300  # stands for NULL in SQL (sqlite3 gives None, numpy wants a float)
PAYLOAD_COLS = ("int64Value", "uint64Value", "int32Value", "uint32Value", "doubleValue",
                "floatValue")


def _payload_sql(cols: frozenset[str]) -> str:
    present = [c for c in PAYLOAD_COLS if c in cols]
    return f"coalesce({', '.join(present)}, {NO_PAYLOAD})" if present else str(NO_PAYLOAD)


def _nvtx(con: sqlite3.Connection, schema: Schema, strings: _Strings,
          dropped: Counter[str]) -> NvtxRanges:
    dtype = [("ts", "i8"), ("end", "i8"), ("type", "i4"), ("gtid", "i8"),
             ("text", "i8"), ("name", "i8"), ("domain", "i8"), ("payload", "f8")]
    empty = np.empty(0, np.dtype(dtype))
    if not schema.has(NVTX) or "start" not in schema.tables[NVTX]:
        a = empty
        domains: dict[int, str] = {}
    else:
        c = schema.col
        cols = schema.tables[NVTX]
        gt = c(NVTX, "globalTid", default="0")
        # Inline texts are interned in SQL: one Python string per distinct text.
        con.execute("CREATE TEMP TABLE IF NOT EXISTS stepscope_nvtx_text"
                    "(id INTEGER PRIMARY KEY, value TEXT UNIQUE)")
        con.execute("DELETE FROM temp.stepscope_nvtx_text")
        text_col = "-1"
        if "text" in cols:
            con.execute("INSERT OR IGNORE INTO temp.stepscope_nvtx_text(value) "
                        f"SELECT DISTINCT text FROM {NVTX} WHERE text IS NOT NULL "
                        f"AND eventType IN ({','.join(map(str, NVTX_TYPES))})")
            text_col = ("coalesce((SELECT t.id FROM temp.stepscope_nvtx_text t "
                        "WHERE t.value = n.text), -1)")
        a = _query(con, (
            f"SELECT n.start, n.end, n.eventType, {gt}, {text_col}, {c(NVTX, 'textId')}, "
            f"{c(NVTX, 'domainId', default='0')}, {_payload_sql(cols)} "
            f"FROM {NVTX} n WHERE n.end IS NOT NULL AND n.eventType IN "
            f"({','.join(map(str, NVTX_TYPES))})"), dtype, dropped=dropped, table=NVTX)
        a = a[np.lexsort((-a["end"], a["ts"]))]  # parents before their children
        # temp ids (1..k) -> our string ids, one Python step per distinct text
        temp = con.execute("SELECT id, value FROM temp.stepscope_nvtx_text").fetchall()
        lut = np.full(max((r[0] for r in temp), default=0) + 1, -1, np.int64)
        for tid_, value in temp:
            lut[tid_] = strings.add(str(value))
        a["text"] = np.where(a["text"] >= 0, lut[np.clip(a["text"], 0, len(lut) - 1)],
                             a["text"])
        domains = {}
        if "text" in cols and "domainId" in cols:
            for did, text in con.execute(
                f"SELECT domainId, text FROM {NVTX} WHERE eventType = {NVTX_DOMAIN_CREATE}"
            ):
                if did is not None and text is not None:
                    domains[int(did)] = str(text)
    uniq, inv = np.unique(a["domain"], return_inverse=True)
    dom_ids = np.array([strings.add(domains.get(d, f"domain {d}")) if d > 0 else -1
                        for d in uniq.tolist()], np.int32)
    style_of = np.full(128, NVTX_PUSHPOP, np.int8)
    for t, s in NVTX_TYPES.items():
        style_of[t] = s
    return NvtxRanges.from_columns({
        "name": np.where(a["text"] >= 0, a["text"], strings.checked(a["name"])), "ts": a["ts"],
        "dur": np.maximum(a["end"] - a["ts"], 0),
        "pid": strings.of_ints(pid_of(a["gtid"])), "tid": strings.of_ints(a["gtid"] & 0xFFFFFF),
        "domain": dom_ids[inv.reshape(-1)] if len(a) else np.empty(0, np.int32),
        "style": style_of[np.clip(a["type"], 0, 127)],
        "payload": np.where(a["payload"] == NO_PAYLOAD, np.nan, a["payload"]),
    })


def nvtx_display_names(strings: _Strings, nvtx: NvtxRanges) -> npt.NDArray[np.int32]:
    """``domain:range`` for ranges outside the default domain, as ``nsys stats`` prints."""
    if not len(nvtx):
        return np.empty(0, np.int32)
    pairs = np.stack([nvtx.domain.astype(np.int64), nvtx.name.astype(np.int64)], axis=1)
    uniq, inv = np.unique(pairs, axis=0, return_inverse=True)
    out = []
    for dom, nid in uniq.tolist():
        text = strings.values[nid] if 0 <= nid < len(strings.values) else ""
        out.append(strings.add(f"{strings.values[dom]}:{text}") if dom >= 0 else
                   (nid if 0 <= nid < len(strings.values) else strings.add(text)))
    return np.array(out, np.int32)[inv.reshape(-1)]


def _host(strings: _Strings, nvtx: NvtxRanges) -> HostOps:
    """NVTX ranges as user annotations; step-like ranges renamed ``ProfilerStep#N``."""
    names = nvtx_display_names(strings, nvtx)
    uniq, inv = np.unique(names, return_inverse=True)
    mapped = []
    for nid in uniq.tolist():
        label = step_label(strings.values[nid])
        mapped.append(strings.add(f"ProfilerStep#{label}") if label is not None else nid)
    host_names = np.array(mapped, np.int32)[inv.reshape(-1)] if len(nvtx) else names
    n = len(nvtx)
    return HostOps.from_columns({
        "name": host_names, "ts": nvtx.ts, "dur": nvtx.dur, "pid": nvtx.pid, "tid": nvtx.tid,
        "kind": np.full(n, HOST_ANNOTATION, np.int8), "external_id": np.full(n, -1, np.int64),
        **{c: np.full(n, -1, np.int32) for c in ("input_dims", "call_stack", "input_types",
                                                   "concrete_inputs", "input_strides")},
    })


_OSRT: Spec = [("ts", ("start",), "0", "i8"), ("end", ("end",), "0", "i8"),
         ("gtid", ("globalTid",), "0", "i8"), ("name", ("nameId", "name"), "-1", "i8")]


def _osrt(con: sqlite3.Connection, schema: Schema, strings: _Strings,
          dropped: Counter[str]) -> OsCalls:
    if not schema.has(OSRT):
        a = np.empty(0, np.dtype([(f, d) for f, _, _, d in _OSRT]))
    else:
        a = _sorted(_read_table(con, schema, OSRT, _OSRT, dropped))
    return OsCalls.from_columns({
        "name": strings.checked(a["name"]), "ts": a["ts"], "dur": np.maximum(a["end"] - a["ts"], 0),
        "pid": strings.of_ints(pid_of(a["gtid"])), "tid": strings.of_ints(a["gtid"] & 0xFFFFFF),
    })


def _empty_tables() -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, cls in (("gpu_annotations", GpuAnnotations), ("memory", MemoryRecords)):
        out[name] = cls.from_columns({n: np.empty(0, d) for n, d in cls.DTYPES.items()})
    return out


def read_nsys(local_file: str, path: str) -> Trace:
    """Read the SQLite export at ``local_file`` (``path`` names it in messages)."""
    if not os.path.exists(local_file):
        raise TraceSourceError(f"{path}: no such file")
    try:
        con = sqlite3.connect(sqlite_uri(local_file), uri=True)
    except sqlite3.Error as exc:
        raise TraceSourceError(f"{path}: cannot open as SQLite ({exc})") from None
    # text that is not UTF-8 (a corrupt page, a table name in sqlite_master, a kernel name):
    # U+FFFD for the bad bytes instead of a UnicodeDecodeError out of the cursor
    con.text_factory = _text
    try:
        try:
            schema = Schema.probe(con)
        except UnicodeDecodeError:  # SQLite's own message quotes the corrupt schema bytes
            raise TraceFormatError(f"{path}: not a readable SQLite database (malformed "
                                   "schema: names that are not UTF-8)") from None
        except sqlite3.Error as exc:
            raise TraceFormatError(f"{path}: not a readable SQLite database ({exc})") from None
        if not schema.is_nsys():
            raise TraceFormatError(
                f"{path}: SQLite database, but not an Nsight Systems export "
                "(no StringIds, CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS table)")
        try:
            return _read(con, schema, path)
        except TraceFormatError as exc:
            raise TraceFormatError(f"{path}: {exc}") from None
        except sqlite3.Error as exc:
            raise TraceFormatError(f"{path}: corrupt SQLite export ({exc})") from None
        except UnicodeDecodeError:
            raise TraceFormatError(f"{path}: corrupt SQLite export (text that is not "
                                   "UTF-8 in its schema)") from None
        except (ValueError, TypeError, OverflowError, MemoryError) as exc:
            # a cell of a type or size no producer writes, in a column we need
            raise TraceFormatError(f"{path}: malformed Nsight Systems export "
                                   f"({type(exc).__name__}: {one_line(str(exc), 120)})") from None
    finally:
        con.close()


def _read(con: sqlite3.Connection, schema: Schema, path: str) -> Trace:
    meta_kv = _meta(con, schema)
    strings = _Strings(_read_strings(con, schema))
    devices = _devices(con, schema)
    dropped: Counter[str] = Counter()  # rows with a time beyond MAX_TIME_NS, per table
    device, details = _device(con, schema, strings, devices, dropped)
    runtime = _runtime(con, schema, strings, dropped)
    syncs = _syncs(con, schema, strings, dropped)
    nvtx = _nvtx(con, schema, strings, dropped)
    host = _host(strings, nvtx)
    osrt = _osrt(con, schema, strings, dropped)
    events = len(device) + len(runtime) + len(syncs) + len(nvtx) + len(osrt)
    warnings: list[str] = []
    if strings.unknown:
        warnings.append(f"{strings.unknown:,} name ids are not in StringIds (shown unnamed)")
    if not len(device) and not len(runtime):
        warnings.append("no CUDA trace in this export (profile with -t cuda)")
    skipped = {f"{table}: start or end beyond ±2**61 ns (corrupt row)": n
               for table, n in sorted(dropped.items())}
    product = meta_kv.get("EXPORT_PRODUCT_NAME")
    version = meta_kv.get("EXPORT_PRODUCT_VERSION")
    window = _window(con, schema)
    meta = TraceMeta(
        path=path, format="nsys", events=events, devices=devices,
        window_start=window[0], window_end=window[1],
        vendor="nvidia" if len(device) or devices else "unknown",
        categories={k: v for k, v in (("kernel", int((device.kind == DEV_KERNEL).sum())),
                                      ("memcpy", int((device.kind == DEV_MEMCPY).sum())),
                                      ("memset", int((device.kind == DEV_MEMSET).sum())),
                                      ("cuda_api", len(runtime)), ("sync", len(syncs)),
                                      ("nvtx", len(nvtx)), ("osrt", len(osrt))) if v},
        warnings=tuple(warnings), skipped=skipped,
        format_version=meta_kv.get("EXPORT_SCHEMA_VERSION"),
        diagnostics=_diagnostics(con, schema),
        producer=" ".join(p for p in (product, version) if p) or None,
    )
    return Trace(meta=meta, strings=tuple(strings.values), host=host, runtime=runtime,
                 device=device, syncs=syncs, nvtx=nvtx, osrt=osrt, device_details=details,
                 **_empty_tables())
