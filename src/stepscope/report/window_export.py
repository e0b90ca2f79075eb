"""A window of a trace as a Kineto-style Chrome trace, at full fidelity.

What Kineto wrote for the events in the window comes back out, so Perfetto UI (and
``stepscope report``) opens the export with the same content: the original pid/tid, names
and categories; times in µs with the original ``baseTimeNanoseconds``; the args stepscope
reads (External id, correlation, Input Dims/type/Strides, Concrete Inputs, Call stack,
grid/block, registers, shared memory, blocks per SM, occupancy, bytes, device, stream);
launch → kernel flows as ``ac2g`` flow events; ``[memory]`` records; ``deviceProperties``
and ``distributedInfo``. Counter tracks (memory totals, monitor samples) are added as
Chrome ``C`` events, which Perfetto draws as counter tracks and Kineto readers ignore.
No ``displayTimeUnit``: Kineto writes "ms" (a display hint), but earlier versions of
Perfetto's importer read every timestamp in that unit, which would stretch the window 1000×.
``tests/perfetto_import.py`` holds the export to the rules of Perfetto's JSON importer.

Not exported: args stepscope does not keep (e.g. ``Sequence number``, ``Fwd thread id``),
and events outside the families the model holds.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.model.trace import (
    DEV_MEMCPY,
    DEV_MEMSET,
    HOST_ANNOTATION,
    HOST_PYTHON,
    Trace,
)
from stepscope.report.counters import CounterTracks
from stepscope.report.timeline import (
    MAX_EXPORT,
    T_DEVICE,
    T_GPU_ANNOTATION,
    T_HOST,
    T_RUNTIME,
    TimelineIndex,
)

I64 = npt.NDArray[np.int64]
_INT = re.compile(r"-?\d+")
# model column -> Kineto arg name (and whether the value is JSON text kept verbatim)
HOST_ARGS = (("external_id", "External id", False), ("input_dims", "Input Dims", True),
             ("input_types", "Input type", True), ("concrete_inputs", "Concrete Inputs", True),
             ("input_strides", "Input Strides", True), ("call_stack", "Call stack", False))
DEVICE_ARGS = (("device", "device"), ("stream", "stream"), ("correlation", "correlation"),
               ("external_id", "External id"), ("registers", "registers per thread"),
               ("shared_mem", "shared memory"), ("blocks_per_sm", "blocks per SM"),
               ("occupancy_pct", "est. achieved occupancy %"), ("bytes", "bytes"))


def export_window(tl: TimelineIndex, start: int, end: int,
                  counters: CounterTracks | None = None) -> dict[str, Any]:
    """The events overlapping [start, end) (ns from the timeline's origin) as a Chrome
    trace document; JSON-text args are ``msgspec.Raw`` (encode with msgspec)."""
    tr = tl.trace
    t0, t1 = tl.origin + start, tl.origin + end
    idx = tl.window(start, end)[:MAX_EXPORT]
    base = tr.meta.base_time_ns
    events: list[dict[str, Any]] = []
    by_table = {t: np.sort(tl.src[idx[tl.table[idx] == t]]) for t in range(4)}
    host_pid = _host_pid(tr)
    events += _host(tr, by_table[T_HOST])
    events += _runtime(tr, by_table[T_RUNTIME])
    events += _device(tr, by_table[T_DEVICE])
    events += _gpu_annotations(tr, by_table[T_GPU_ANNOTATION])
    events += _syncs(tr, t0, t1)
    events += _flows(tr, by_table[T_RUNTIME], by_table[T_DEVICE])
    events += _memory(tr, t0, t1, host_pid)
    if counters is not None:
        events += _counters(counters, t0, t1, host_pid)
    events += _names(tr, by_table)
    doc: dict[str, Any] = {
        "schemaVersion": 1,
        "deviceProperties": [_device_props(d) for d in tr.meta.devices],
        "traceEvents": events,
        "otherData": {"source": tr.meta.path, "exported_by": "stepscope",
                      "window_ns": [t0, t1]},
    }
    if base is not None:
        doc["baseTimeNanoseconds"] = base
    if tr.meta.rank is not None:
        doc["distributedInfo"] = {"rank": tr.meta.rank, "world_size": tr.meta.world_size,
                                  "backend": tr.meta.backend}
    return doc


def _us(ns: Iterable[int]) -> list[float]:
    return (np.asarray(ns, np.int64) / 1000.0).tolist()  # type: ignore[no-any-return]


def _ids(tr: Trace, sid: npt.NDArray[np.int32]) -> list[int | str]:
    """pid/tid string ids back to what Kineto wrote: an int when it was a number."""
    uniq, inv = np.unique(sid, return_inverse=True)
    as_json: list[int | str] = []
    for k in uniq.tolist():
        s = tr.name(int(k))
        as_json.append(int(s) if _INT.fullmatch(s) else s)
    return [as_json[j] for j in inv.tolist()]


def _host(tr: Trace, rows: I64) -> list[dict[str, Any]]:
    h = tr.host
    cats = np.where(h.kind[rows] == HOST_PYTHON, 2, np.where(h.kind[rows] == HOST_ANNOTATION,
                                                             1, 0)).tolist()
    names = [tr.name(int(k)) for k in h.name[rows].tolist()]
    pids, tids = _ids(tr, h.pid[rows]), _ids(tr, h.tid[rows])
    ts, dur = _us(h.ts[rows]), _us(h.dur[rows])
    cols = {col: getattr(h, col)[rows].tolist() for col, _, _ in HOST_ARGS}
    out = []
    for k in range(len(rows)):  # output is per event by nature (bounded by MAX_EXPORT)
        args: dict[str, Any] = {}
        for col, key, raw in HOST_ARGS:
            v = cols[col][k]
            if v < 0:
                continue
            if col == "external_id":
                args[key] = v
            else:
                text = tr.strings[v]
                args[key] = msgspec.Raw(text.encode()) if raw else text
        out.append({"ph": "X", "cat": ("cpu_op", "user_annotation", "python_function")[cats[k]],
                    "name": names[k], "pid": pids[k], "tid": tids[k], "ts": ts[k],
                    "dur": dur[k], "args": args})
    return out


def _runtime(tr: Trace, rows: I64) -> list[dict[str, Any]]:
    r = tr.runtime
    cat = {"amd": "hip_runtime", "intel": "xpu_runtime", "mtia": "mtia_runtime"}.get(
        tr.meta.vendor, "cuda_runtime")
    names = [tr.name(int(k)) for k in r.name[rows].tolist()]
    pids, tids = _ids(tr, r.pid[rows]), _ids(tr, r.tid[rows])
    ts, dur = _us(r.ts[rows]), _us(r.dur[rows])
    corr, ext = r.correlation[rows].tolist(), r.external_id[rows].tolist()
    out = []
    for k in range(len(rows)):
        args = {"correlation": corr[k]} if corr[k] >= 0 else {}
        if ext[k] >= 0:
            args["External id"] = ext[k]
        out.append({"ph": "X", "cat": cat, "name": names[k], "pid": pids[k], "tid": tids[k],
                    "ts": ts[k], "dur": dur[k], "args": args})
    return out


def _device(tr: Trace, rows: I64) -> list[dict[str, Any]]:
    d = tr.device
    kind = d.kind[rows].tolist()
    names = [tr.name(int(k)) for k in d.name[rows].tolist()]
    ts, dur = _us(d.ts[rows]), _us(d.dur[rows])
    cols = {col: getattr(d, col)[rows].tolist() for col, _ in DEVICE_ARGS}
    grid = np.stack((d.grid_x[rows], d.grid_y[rows], d.grid_z[rows]), axis=1).tolist()
    block = np.stack((d.block_x[rows], d.block_y[rows], d.block_z[rows]), axis=1).tolist()
    out = []
    for k in range(len(rows)):
        args: dict[str, Any] = {}
        for col, key in DEVICE_ARGS:
            v = cols[col][k]
            if v == v and v != -1:  # NaN / missing
                args[key] = v
        if grid[k][0] >= 0:
            args["grid"] = grid[k]
        if block[k][0] >= 0:
            args["block"] = block[k]
        cat = "gpu_memcpy" if kind[k] == DEV_MEMCPY else "gpu_memset" \
            if kind[k] == DEV_MEMSET else "kernel"
        out.append({"ph": "X", "cat": cat, "name": names[k], "pid": cols["device"][k],
                    "tid": cols["stream"][k], "ts": ts[k], "dur": dur[k], "args": args})
    return out


def _ranged(tr: Trace, table: Any, rows: I64, cat: str,
            extra: list[str]) -> list[dict[str, Any]]:
    names = [tr.name(int(k)) for k in table.name[rows].tolist()]
    ts, dur = _us(table.ts[rows]), _us(table.dur[rows])
    dev, stream = table.device[rows].tolist(), table.stream[rows].tolist()
    more = {c: getattr(table, c)[rows].tolist() for c in extra}
    return [{"ph": "X", "cat": cat, "name": names[k], "pid": dev[k], "tid": stream[k],
             "ts": ts[k], "dur": dur[k],
             "args": {"device": dev[k], "stream": stream[k],
                      **{c: more[c][k] for c in extra if more[c][k] >= 0}}}
            for k in range(len(rows))]


def _gpu_annotations(tr: Trace, rows: I64) -> list[dict[str, Any]]:
    return _ranged(tr, tr.gpu_annotations, rows, "gpu_user_annotation", [])


def _syncs(tr: Trace, t0: int, t1: int) -> list[dict[str, Any]]:
    s = tr.syncs
    rows = np.flatnonzero((s.ts < t1) & (s.ts + s.dur > t0))
    return _ranged(tr, s, rows, "cuda_sync", ["correlation"])


def _flows(tr: Trace, rt_rows: I64, dev_rows: I64) -> list[dict[str, Any]]:
    """``ac2g`` flow pairs for launches whose kernel is exported too (id = correlation)."""
    r, d = tr.runtime, tr.device
    rc, dc = r.correlation[rt_rows], d.correlation[dev_rows]
    common, ri, di = np.intersect1d(rc, dc, return_indices=True)
    keep = common >= 0
    ri, di, common = rt_rows[ri[keep]], dev_rows[di[keep]], common[keep]
    pids, tids = _ids(tr, r.pid[ri]), _ids(tr, r.tid[ri])
    rts, dts = _us(r.ts[ri]), _us(d.ts[di])
    dev, stream = d.device[di].tolist(), d.stream[di].tolist()
    out = []
    for k, c in enumerate(common.tolist()):
        out.append({"ph": "s", "id": c, "pid": pids[k], "tid": tids[k], "ts": rts[k],
                    "cat": "ac2g", "name": "ac2g"})
        out.append({"ph": "f", "id": c, "pid": dev[k], "tid": stream[k], "ts": dts[k],
                    "cat": "ac2g", "name": "ac2g", "bp": "e"})
    return out


def _memory(tr: Trace, t0: int, t1: int, pid: int | str) -> list[dict[str, Any]]:
    m = tr.memory
    rows = np.flatnonzero((m.ts >= t0) & (m.ts < t1))
    cols = {c: getattr(m, c)[rows].tolist() for c in
            ("device_type", "device_id", "bytes", "addr", "total_allocated", "total_reserved")}
    tids, ts = _ids(tr, m.tid[rows]), _us(m.ts[rows])
    return [{"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": pid,
             "tid": tids[k], "ts": ts[k],
             "args": {"Device Type": cols["device_type"][k], "Device Id": cols["device_id"][k],
                      "Addr": cols["addr"][k], "Bytes": cols["bytes"][k],
                      "Total Allocated": cols["total_allocated"][k],
                      "Total Reserved": cols["total_reserved"][k]}}
            for k in range(len(rows))]


def _counters(counters: CounterTracks, t0: int, t1: int,
              pid: int | str) -> list[dict[str, Any]]:
    out = []
    for t in counters.tracks:
        rows = np.flatnonzero((t.ts >= t0) & (t.ts < t1) & np.isfinite(t.values))
        ts, vals = _us(t.ts[rows]), t.values[rows].tolist()
        out += [{"ph": "C", "cat": "stepscope_counter", "name": f"{t.label} ({t.unit})",
                 "pid": pid, "ts": ts[k], "args": {"value": vals[k]}}
                for k in range(len(rows))]
    return out


def _names(tr: Trace, by_table: dict[int, I64]) -> list[dict[str, Any]]:
    """process_name / thread_name metadata for the device pids (as Kineto writes them)."""
    d = tr.device
    rows = by_table[T_DEVICE]
    pairs = sorted(set(zip(d.device[rows].tolist(), d.stream[rows].tolist(), strict=True)))
    out: list[dict[str, Any]] = []
    for dev in sorted({p[0] for p in pairs}):
        out.append({"ph": "M", "name": "process_name", "pid": dev, "tid": 0,
                    "args": {"name": f"GPU {dev}"}})
    for dev, stream in pairs:
        out.append({"ph": "M", "name": "thread_name", "pid": dev, "tid": stream,
                    "args": {"name": f"stream {stream}"}})
    return out


def _host_pid(tr: Trace) -> int | str:
    """The host process (most events): the pid [memory] records and counters go on."""
    if not len(tr.host):
        return 0
    ids, counts = np.unique(tr.host.pid, return_counts=True)
    return _ids(tr, ids[np.argmax(counts)][None])[0]


def _device_props(d: Any) -> dict[str, Any]:
    return {"id": d.id, "name": d.name, "totalGlobalMem": d.total_memory,
            "computeMajor": d.compute_major, "computeMinor": d.compute_minor,
            "numSms": d.num_sms, "maxThreadsPerMultiprocessor": d.max_threads_per_sm,
            "warpSize": d.warp_size}
