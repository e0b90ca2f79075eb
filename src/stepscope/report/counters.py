"""Counter tracks of the timeline besides GPU utilisation: memory and monitor samples.

- **Memory allocated / reserved** per device, from the trace's ``[memory]`` records
  (``profile_memory=True``): each record carries the allocator's totals just after it
  (``Total Allocated``, ``Total Reserved``), so the series is a step function of time.
- **Monitor samples** (``stepscope run --monitor`` writes ``monitor.parquet`` beside the
  trace; docs/monitor.md): host CPU %, per GPU NVML utilisation, memory used and power,
  the main process's RSS. Each row has the wall clock of its tick (``wall``, epoch s); Kineto
  times are relative to ``baseTimeNanoseconds`` (wall clock = ts + base), so a sample lands
  at ``wall * 1e9 - base``. A trace without that base (Kineto before PyTorch 2.2, epoch µs)
  is taken as epoch already. Samples that land outside the trace are not shown, and say so.

A query resamples each track onto ``bins`` equal bins of the window: a bin shows the largest
value the series took in it (the value held from before the bin included), so a short peak
is never lost at any zoom. Vectorised numpy; Python loops run over tracks only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import Trace

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]
# (column, label, unit): scalar columns, then per-GPU list columns ("{i}" = GPU index)
MONITOR_SCALARS = (("cpu", "host CPU (monitor)", "%"), ("main_rss", "main process RSS", "B"))
MONITOR_GPU = (("gpu_util", "GPU {i} busy (NVML)", "%"),
               ("gpu_mem_used", "GPU {i} memory used (NVML)", "B"),
               ("gpu_power", "GPU {i} power", "W"),
               ("gpu_sm_active", "GPU {i} SM active (GPM)", "%"))


@dataclass(frozen=True)
class Track:
    id: str
    label: str
    unit: str  # "B", "%", "W", ...
    ts: I64  # ns, same clock as the trace's events, sorted
    values: F64
    source: str  # "memory" | "monitor"


class CounterTracks:
    """The counter tracks of one trace (and its monitor file, when one sits beside it)."""

    def __init__(self, trace: Trace, monitor: dict[str, Any] | None = None) -> None:
        self.tracks: list[Track] = memory_tracks(trace)
        self.notes: list[str] = []
        if monitor:
            base = trace.meta.base_time_ns or 0
            tracks = monitor_tracks(monitor, base)
            lo, hi = _span(trace)
            inside = [t for t in tracks if len(t.ts) and t.ts[-1] >= lo and t.ts[0] <= hi]
            if tracks and not inside:
                self.notes.append("monitor samples beside the trace do not overlap its "
                                  "time span (another run, or a clock the trace does not "
                                  "share): not shown")
            self.tracks += inside

    def meta(self) -> list[dict[str, Any]]:
        return [{"id": t.id, "label": t.label, "unit": t.unit, "source": t.source,
                 "max": float(np.nanmax(t.values)) if len(t.values) else 0.0}
                for t in self.tracks]

    def query(self, t0: int, t1: int, bins: int) -> list[dict[str, Any]]:
        """Each track over [t0, t1) (absolute ns) in ``bins`` bins: max per bin, None before
        the first sample."""
        edges = np.linspace(t0, t1, max(1, bins) + 1).astype(np.int64)
        out = []
        for t in self.tracks:
            v = bin_max(t.ts, t.values, edges)
            out.append({"id": t.id, "label": t.label, "unit": t.unit,
                        "values": [None if math.isnan(x) else x for x in v.tolist()]})
        return out


def bin_max(ts: I64, values: F64, edges: I64) -> F64:
    """Largest value of a step series (``values[k]`` from ``ts[k]`` on) in each bin."""
    nb = len(edges) - 1
    out = np.full(nb, np.nan)
    if not len(ts) or nb <= 0:
        return out
    first = np.searchsorted(ts, edges[:-1], side="left")  # first sample in each bin
    last = np.searchsorted(ts, edges[1:], side="left")  # one past the last
    held = np.where(first > 0, values[np.maximum(first - 1, 0)], np.nan)
    has = last > first
    if has.any():
        # reduceat over the interleaved [first, last) bounds: even slots are each bin's max
        idx = np.empty(2 * int(has.sum()), np.int64)
        idx[0::2], idx[1::2] = first[has], last[has]
        out[has] = np.maximum.reduceat(np.append(values, -np.inf), idx)[0::2]
    peak: F64 = np.fmax(out, held)
    return peak


def memory_tracks(trace: Trace) -> list[Track]:
    """Allocated and reserved bytes per (device type, device) from the [memory] records."""
    m = trace.memory
    tracks: list[Track] = []
    if not len(m):
        return tracks
    order = np.argsort(m.ts, kind="stable")
    # ids are >= -1 (a CPU record has device id -1): shift by one to pack them
    key = (m.device_type[order].astype(np.int64) + 1) << 32 | (m.device_id[order] + 1)
    for k in np.unique(key).tolist():
        sel = order[key == k]
        dtype, dev = (int(k) >> 32) - 1, (int(k) & 0xFFFFFFFF) - 1
        # c10::DeviceType: 0 CPU, 1 CUDA, 6 HIP (ROCm builds), 12 XPU
        where = "CPU" if dtype == 0 else f"GPU {dev}" if dtype in (1, 6) else \
            f"XPU {dev}" if dtype == 12 else f"device {dtype}:{dev}"
        for col, what in (("total_allocated", "allocated"), ("total_reserved", "reserved")):
            vals = getattr(m, col)[sel]
            ok = vals >= 0
            if ok.any() and vals[ok].any():  # the CPU allocator reserves nothing: no track
                tracks.append(Track(f"mem:{dtype}:{dev}:{what}", f"{where} {what}", "B",
                                    m.ts[sel][ok].astype(np.int64),
                                    vals[ok].astype(np.float64), "memory"))
    return tracks


def read_monitor(trace_path: str) -> dict[str, Any] | None:
    """The sample columns of the monitor output beside a local trace (formats/monitor finds and
    reads it, as the report's System view does), None when there is none.

    A file that cannot be read is skipped (the timeline is still shown without it)."""
    from stepscope.errors import TraceSourceError
    from stepscope.formats.monitor.read import read_samples, samples_beside

    path = samples_beside(trace_path)
    if path is None:
        return None
    try:
        columns = read_samples(path).columns
    except TraceSourceError:
        return None
    wanted = ["wall"] + [c for c, _, _ in MONITOR_SCALARS] + [c for c, _, _ in MONITOR_GPU]
    return {c: columns[c] for c in wanted if c in columns} if "wall" in columns else None


def monitor_tracks(columns: dict[str, Any], base_ns: int) -> list[Track]:
    """One track per monitor column present, times moved onto the trace's clock."""
    wall = np.asarray(columns.get("wall", []), np.float64)
    ts = np.round(wall * 1e9).astype(np.int64) - base_ns
    order = np.argsort(ts, kind="stable")
    ts = ts[order]
    tracks: list[Track] = []
    for col, label, unit in MONITOR_SCALARS:
        if col in columns:
            v = np.asarray([np.nan if x is None else x for x in columns[col]], np.float64)[order]
            if np.isfinite(v).any():
                tracks.append(Track(f"monitor:{col}", label, unit, ts, v, "monitor"))
    for col, label, unit in MONITOR_GPU:
        lists = columns.get(col)
        if not lists:
            continue
        width = max((len(x) for x in lists if x), default=0)
        grid = np.full((len(lists), width), np.nan)
        for r, x in enumerate(lists):  # one list per tick (ticks: tens of thousands at most)
            if x:
                grid[r, :len(x)] = [np.nan if y is None else y for y in x]
        grid = grid[order]
        for i in range(width):
            if np.isfinite(grid[:, i]).any():
                tracks.append(Track(f"monitor:{col}:{i}", label.format(i=i), unit, ts,
                                    grid[:, i].copy(), "monitor"))
    return tracks


def _span(trace: Trace) -> tuple[int, int]:
    starts = [t.ts[:1] for t in (trace.host, trace.runtime, trace.device) if len(t)]
    ends = [t.end.max(initial=0) for t in (trace.host, trace.runtime, trace.device) if len(t)]
    if not starts:
        return 0, 0
    return int(min(int(s[0]) for s in starts)), int(max(int(e) for e in ends))
