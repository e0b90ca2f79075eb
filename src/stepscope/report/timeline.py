"""Timeline index and level-of-detail queries for the dashboard and the HTML report.

All events of a trace are flattened once into one table sorted by (row, start): host ops
and runtime calls on their thread's row, kernels/memcpys/memsets on their stream's row,
GPU annotations on a row per stream. A query for a window and a pixel width returns the
events at least one pixel wide one by one and aggregates the rest per (row, depth, pixel),
so the answer is bounded by rows x depth x width whatever the trace size; so is the work,
through the duration-level index and pyramid of ``report/lod.py``. Vectorised numpy
throughout; the only Python loops run over rows and duration levels, never over events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events import intervals
from stepscope.model.trace import DEV_KERNEL, HOST_PYTHON, Trace
from stepscope.report.lod import Lod

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]

# Flat.table values
T_HOST, T_RUNTIME, T_DEVICE, T_GPU_ANNOTATION = 0, 1, 2, 3
TABLE_NAMES = ("host", "runtime", "device", "gpu_annotations")
_KINDS = (("operator", "annotation", "python"), (), ("kernel", "memcpy", "memset"), ())
MAX_FLOWS = 2000  # flow arrows per answer
MAX_EXPORT = 2_000_000  # events in one exported window


@dataclass(frozen=True)
class Row:
    id: int
    group: str  # e.g. "Process 123" / "GPU 0"
    label: str  # e.g. "Thread 456" / "Stream 7"
    kind: str  # "thread" | "python" | "stream" | "annotations"
    of: int = -1  # a "python" row: the id of its thread's row


class TimelineIndex:
    """The flattened, sorted events of one trace plus per-row lookup structures."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        h, r, d, g = trace.host, trace.runtime, trace.device, trace.gpu_annotations
        strings = trace.strings
        # Row keys: threads (pid, tid string ids), streams (device, stream), annotation rows.
        host_key = np.concatenate((_pair(h.pid, h.tid), _pair(r.pid, r.tid)))
        dev_key = _pair(d.device, d.stream)
        ann_key = _pair(g.device, g.stream)
        thread_keys, thread_inv = np.unique(host_key, return_inverse=True)
        stream_keys, stream_inv = np.unique(dev_key, return_inverse=True)
        ann_keys, ann_inv = np.unique(ann_key, return_inverse=True)
        # Python frames (with_stack) nest 20-80 deep above the operators; on a row of their
        # own, just above their thread's, operators and launches keep their small depths
        # and the page can fold the frames.
        is_py = np.concatenate((h.kind == HOST_PYTHON, np.zeros(len(r), bool)))
        has_py = np.zeros(len(thread_keys), bool)
        has_py[thread_inv[is_py]] = True
        has_op = np.zeros(len(thread_keys), bool)
        has_op[thread_inv[~is_py]] = True
        rows: list[Row] = []
        op_row, py_row = np.zeros(len(thread_keys), np.int32), np.zeros(len(thread_keys), np.int32)
        for k, key in enumerate(thread_keys.tolist()):
            pid, tid = _split(key)
            group = f"Process {strings[pid] if pid >= 0 else '?'}"
            label = f"Thread {strings[tid] if tid >= 0 else '?'}"
            if has_py[k]:
                py_row[k] = len(rows)
                rows.append(Row(len(rows), group, f"{label} Python", "python",
                                len(rows) + 1 if has_op[k] else -1))
            if has_op[k]:
                op_row[k] = len(rows)
                rows.append(Row(len(rows), group, label, "thread"))
        n_threads = len(rows)
        for k in stream_keys.tolist():
            dev, stream = _split(k)
            rows.append(Row(len(rows), f"GPU {dev}", f"Stream {stream}", "stream"))
        for k in ann_keys.tolist():
            dev, stream = _split(k)
            rows.append(Row(len(rows), f"GPU {dev}", f"Stream {stream} annotations",
                            "annotations"))
        self.rows = rows
        n_streams = len(stream_keys)
        row = np.concatenate((
            np.where(is_py, py_row[thread_inv], op_row[thread_inv]).astype(np.int32),
            (stream_inv + n_threads).astype(np.int32),
            (ann_inv + n_threads + n_streams).astype(np.int32),
        ))
        ts = np.concatenate((h.ts, r.ts, d.ts, g.ts)).astype(np.int64)
        dur = np.maximum(np.concatenate((h.dur, r.dur, d.dur, g.dur)), 0).astype(np.int64)
        table = np.concatenate((
            np.full(len(h), T_HOST, np.int8), np.full(len(r), T_RUNTIME, np.int8),
            np.full(len(d), T_DEVICE, np.int8), np.full(len(g), T_GPU_ANNOTATION, np.int8),
        ))
        src = np.concatenate((np.arange(len(h)), np.arange(len(r)), np.arange(len(d)),
                              np.arange(len(g)))).astype(np.int32)
        name = np.concatenate((h.name, r.name, d.name, g.name)).astype(np.int32)
        # Longer first at equal start so parents precede children.
        order = np.lexsort((-dur, ts, row))
        self.row, self.ts, self.dur = row[order], ts[order], dur[order]
        self.table, self.src, self.name = table[order], src[order], name[order]
        del row, ts, dur, table, src, name, order
        end = self.ts + self.dur
        self.n = len(self.ts)
        bounds = np.searchsorted(self.row, np.arange(len(rows) + 1))
        self.row_lo, self.row_hi = bounds[:-1], bounds[1:]
        self.depth = np.zeros(self.n, np.int16)
        self.row_maxdur = np.zeros(len(rows), np.int64)
        self.row_depths = np.zeros(len(rows), np.int32)
        for i in range(len(rows)):
            lo, hi = int(self.row_lo[i]), int(self.row_hi[i])
            if hi == lo:
                continue
            self.depth[lo:hi] = _nesting_depth(self.ts[lo:hi], end[lo:hi])
            self.row_maxdur[i] = int(self.dur[lo:hi].max())
            self.row_depths[i] = int(self.depth[lo:hi].max()) + 1
        self.origin = int(self.ts.min()) if self.n else 0
        self.finish = int(end.max()) if self.n else 0
        self.end = end
        # Flow partner of each event: runtime launch <-> device op with the same correlation.
        self.partner = np.full(self.n, -1, np.int32 if self.n < 2**31 else np.int64)
        corr = np.full(self.n, -1, np.int64)
        is_rt, is_dev = self.table == T_RUNTIME, self.table == T_DEVICE
        corr[is_rt] = r.correlation[self.src[is_rt]]
        corr[is_dev] = d.correlation[self.src[is_dev]]
        self._link(corr, is_rt, is_dev)
        del corr, is_rt, is_dev
        # GPU-utilization counter: union of kernel time per device.
        self.devices = sorted({int(x) for x in np.unique(d.device).tolist()})
        self.busy: dict[int, intervals.Union] = {}
        for dev in self.devices:
            m = (d.device == dev) & (d.kind == DEV_KERNEL)
            self.busy[dev] = intervals.union(d.ts[m], d.ts[m] + np.maximum(d.dur[m], 0))
        self.lod = Lod(self.ts, self.dur, self.row, self.depth, self.origin, len(rows))

    def _link(self, corr: I64, is_rt: npt.NDArray[np.bool_], is_dev: npt.NDArray[np.bool_]
              ) -> None:
        rt_idx = np.flatnonzero(is_rt & (corr >= 0))
        dev_idx = np.flatnonzero(is_dev & (corr >= 0))
        if not len(rt_idx) or not len(dev_idx):
            return
        o = np.argsort(corr[rt_idx], kind="stable")
        rt_sorted, rt_corr = rt_idx[o], corr[rt_idx][o]
        pos = np.clip(np.searchsorted(rt_corr, corr[dev_idx]), 0, len(rt_corr) - 1)
        hit = rt_corr[pos] == corr[dev_idx]
        self.partner[dev_idx[hit]] = rt_sorted[pos[hit]]
        self.partner[rt_sorted[pos[hit]]] = dev_idx[hit]

    def meta(self) -> dict[str, Any]:
        return {
            "origin_ns": self.origin,
            "start": 0,
            "end": self.finish - self.origin,
            "events": self.n,
            "rows": [
                {"id": r.id, "group": r.group, "label": r.label, "kind": r.kind,
                 "depths": int(self.row_depths[r.id]), "of": r.of,
                 "events": int(self.row_hi[r.id] - self.row_lo[r.id])}
                for r in self.rows
            ],
            "devices": self.devices,
        }

    def window(self, start: int, end: int) -> I64:
        """Flat indices of the events overlapping [origin+start, origin+end), row by row."""
        t0, t1 = self.origin + start, self.origin + end
        parts: list[I64] = []
        for i in range(len(self.rows)):
            lo, hi = int(self.row_lo[i]), int(self.row_hi[i])
            a = lo + int(np.searchsorted(self.ts[lo:hi], t0 - self.row_maxdur[i]))
            b = lo + int(np.searchsorted(self.ts[lo:hi], t1))
            if b > a:
                idx = np.arange(a, b, dtype=np.int64)
                parts.append(idx[self.end[a:b] > t0])
        return np.concatenate(parts) if parts else np.empty(0, np.int64)

    def query(self, start: int, end: int, width: int) -> dict[str, Any]:
        """Level-of-detail answer for a window (ns relative to origin) drawn ``width`` px wide."""
        width = max(1, min(int(width), 10_000))
        end = max(end, start + 1)
        ns_px = (end - start) / width
        # events at least a pixel wide one by one, the rest summed per (row, depth, pixel)
        lod = self.lod.query(start, end, width)
        ev = lod.events
        flows = self._flows(ev, start, end)
        names = np.unique(self.name[ev])
        strings = self.trace.strings
        return {
            "start": start, "end": end, "width": width,
            "events": {
                "id": ev.tolist(),
                "row": self.row[ev].tolist(),
                "depth": self.depth[ev].tolist(),
                "ts": (self.ts[ev] - self.origin).tolist(),
                "dur": self.dur[ev].tolist(),
                "name": self.name[ev].tolist(),
            },
            "names": {str(int(k)): strings[int(k)] if k >= 0 else "" for k in names},
            "aggregates": {
                "row": lod.agg_row.tolist(),
                "depth": lod.agg_depth.tolist(),
                "ts": np.round(start + lod.agg_px * ns_px).astype(np.int64).tolist(),
                "dur": max(1, round(ns_px)),
                "count": lod.agg_count.tolist(),
                "busy": lod.agg_busy.tolist(),
            },
            "flows": flows,
            "counters": self.utilization(start, end, max(1, width // 2)),
        }

    def _flows(self, ev: I64, start: int, end: int) -> dict[str, list[int]]:
        """Launch -> device-op arrows with at least one end drawn (the other may be off-screen)."""
        linked = ev[self.partner[ev] >= 0]
        is_dev = self.table[linked] == T_DEVICE
        dev = np.where(is_dev, linked, self.partner[linked])
        src = np.where(is_dev, self.partner[linked], linked)
        dev, first = np.unique(dev, return_index=True)
        src = src[first]
        dev, src = dev[:MAX_FLOWS], src[:MAX_FLOWS]
        return {"from": src.tolist(), "to": dev.tolist(),
                "from_row": self.row[src].tolist(), "from_depth": self.depth[src].tolist(),
                "from_ts": (self.ts[src] - self.origin).tolist(),
                "to_row": self.row[dev].tolist(), "to_depth": self.depth[dev].tolist(),
                "to_ts": (self.ts[dev] - self.origin).tolist()}

    def utilization(self, start: int, end: int, bins: int) -> list[dict[str, Any]]:
        """Per device: share of each bin covered by kernels (0..1)."""
        edges = np.linspace(self.origin + start, self.origin + end, bins + 1).astype(np.int64)
        out = []
        for dev in self.devices:
            covered = intervals.measure_in(self.busy[dev], edges[:-1], edges[1:])
            span = np.maximum(edges[1:] - edges[:-1], 1)
            out.append({"device": dev, "label": f"GPU {dev} utilization",
                        "values": np.round(covered / span, 4).tolist()})
        return out

    def event(self, i: int) -> dict[str, Any]:
        """One event with every column of its source table (the args panel)."""
        t = int(self.table[i])
        tab = (self.trace.host, self.trace.runtime, self.trace.device,
               self.trace.gpu_annotations)[t]
        j = int(self.src[i])
        args: dict[str, Any] = {}
        for col, arr in tab.columns().items():
            v = arr[j].item()
            if col in ("name", "ts", "dur"):
                continue
            if col in ("pid", "tid", "input_dims", "call_stack"):
                v = self.trace.name(int(v))
            if col == "kind":
                v = _KINDS[t][int(v)] if 0 <= int(v) < len(_KINDS[t]) else v
            if isinstance(v, float) and v != v:
                continue
            if v in (-1, ""):
                continue
            args[col] = v
        partner = int(self.partner[i])
        return {
            "id": i, "table": TABLE_NAMES[t], "name": self.trace.name(int(self.name[i])),
            "row": int(self.row[i]), "depth": int(self.depth[i]),
            "ts": int(self.ts[i] - self.origin), "dur": int(self.dur[i]), "args": args,
            "flow": None if partner < 0 else {
                "id": partner, "name": self.trace.name(int(self.name[partner])),
                "row": int(self.row[partner]), "ts": int(self.ts[partner] - self.origin),
                "dur": int(self.dur[partner]),
            },
        }

    def summary(self, cap: int) -> dict[str, Any]:
        """A bounded, self-contained copy for the HTML report: the ``cap`` longest events.

        Dropping the shortest events first keeps everything visible at the zoomed-out view;
        what is left out is stated (``kept`` of ``events``).
        """
        keep = np.arange(self.n)
        if self.n > cap:
            keep = np.sort(np.argpartition(-self.dur, cap - 1)[:cap])
        names = np.unique(self.name[keep])
        name_ix = np.searchsorted(names, self.name[keep])
        flows_to = keep[(self.table[keep] == T_DEVICE) & (self.partner[keep] >= 0)]
        flows_from = self.partner[flows_to]
        in_keep = np.isin(flows_from, keep)
        pos = np.searchsorted(keep, np.concatenate((flows_from[in_keep], flows_to[in_keep])))
        half = len(pos) // 2
        return {
            **self.meta(),
            "cap": cap,
            "kept": len(keep),
            "columns": {
                "row": self.row[keep].tolist(),
                "depth": self.depth[keep].tolist(),
                "ts": (self.ts[keep] - self.origin).tolist(),
                "dur": self.dur[keep].tolist(),
                "name": name_ix.tolist(),
                "table": self.table[keep].tolist(),
            },
            "strings": [self.trace.strings[int(k)] if k >= 0 else "" for k in names],
            "flows": {"from": pos[:half].tolist(), "to": pos[half:].tolist()},
            "counters": self.utilization(0, self.finish - self.origin, 2000),
        }


def _pair(a: npt.NDArray[Any], b: npt.NDArray[Any]) -> I64:
    return (a.astype(np.int64) << 32) | (b.astype(np.int64) & 0xFFFFFFFF)


def _split(k: int) -> tuple[int, int]:
    lo = k & 0xFFFFFFFF
    return k >> 32, lo - (1 << 32) if lo >= 1 << 31 else lo


def _nesting_depth(ts: I64, end: I64) -> npt.NDArray[np.int16]:
    """Stack depth of each interval in a row sorted by (start, -duration).

    Depth = intervals started before this one minus those already ended; exact for
    properly nested ranges, and partially overlapping ones still land on distinct levels.
    """
    n = len(ts)
    ended = np.searchsorted(np.sort(end), ts, side="right")
    depth: npt.NDArray[np.int16] = np.clip(np.arange(n) - ended, 0, 32767).astype(np.int16)
    return depth
