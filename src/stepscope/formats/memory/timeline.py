"""Reader for ``profile.export_memory_timeline`` output.

Two JSON layouts (optionally gzipped): the raw export (``*.raw.json.gz``) is a list of
``[time_ns, action, bytes, category]`` rows (action 1 pre-existing, 2 create, 3 new version,
4 destroy; bytes already signed; time -1 for memory that existed before profiling), and
the plot export (``*.json[.gz]``) is ``[times_us, sizes]`` with one row of
``[0, parameter, optimizer_state, input, temporary, activation, gradient, autograd_detail,
unknown]`` bytes per time. The HTML export holds only a picture and is refused.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import StepscopeError, TraceFormatError, one_line
from stepscope.io.source import is_url, local_path, read_source
from stepscope.model.memory_files import TIMELINE_CATEGORIES, MemoryTimeline
from stepscope.model.trace import Trace

N_CAT = len(TIMELINE_CATEGORIES)


_LIMIT = float(2**62)  # int64 with room: beyond it sums and ns conversions wrap silently


def _check_range(path: str, t_ns: Any, total_bytes: float) -> None:
    """Refuse numbers no profiler writes (they wrapped round into nonsense sizes)."""
    if len(t_ns) and float(np.abs(t_ns).max()) >= _LIMIT:
        raise TraceFormatError(f"{path}: memory timeline times out of range (corrupt file?)")
    if total_bytes >= _LIMIT:
        raise TraceFormatError(f"{path}: memory timeline sizes out of range (corrupt file?)")


def _raw(rows: Any, path: str) -> MemoryTimeline:
    try:
        arr = np.array(rows, dtype=np.int64)
    except (ValueError, TypeError, OverflowError):
        raise TraceFormatError(f"{path}: memory timeline rows are not [time, action, bytes, "
                               "category] integers") from None
    if arr.ndim != 2 or arr.shape[1] != 4:
        raise TraceFormatError(f"{path}: memory timeline rows are not [time, action, bytes, "
                               "category]")
    t, cat, nbytes = arr[:, 0], arr[:, 3], arr[:, 2]
    _check_range(path, t, np.abs(nbytes).sum(dtype=np.float64))  # the running sums fit
    if len(arr) and (cat.min() < 0 or cat.max() >= N_CAT):
        raise TraceFormatError(f"{path}: memory timeline category outside 0..{N_CAT - 1}")
    pos = t[t >= 0]
    t = np.where(t < 0, pos.min() if len(pos) else 0, t)  # pre-existing: at the start
    order = np.argsort(t, kind="stable")
    t, cat, nbytes = t[order], cat[order], nbytes[order]
    delta = np.zeros((len(t), N_CAT), dtype=np.int64)
    delta[np.arange(len(t)), cat] = nbytes
    sizes = np.cumsum(delta, axis=0)
    last = np.flatnonzero(np.append(t[1:] != t[:-1], True)) if len(t) else np.zeros(0, int)
    return MemoryTimeline(path=path, raw=True, t_ns=t[last], sizes=sizes[last])


def _plot(doc: Any, path: str) -> MemoryTimeline:
    times, sizes = doc
    try:
        t = np.array(times, dtype=np.int64) * 1000
        s = np.array(sizes, dtype=np.int64)
    except (ValueError, TypeError, OverflowError):
        raise TraceFormatError(f"{path}: memory timeline is not [times, sizes]") from None
    if s.ndim != 2 or s.shape[0] != len(t) or s.shape[1] != N_CAT + 1:
        raise TraceFormatError(f"{path}: memory timeline sizes are not {N_CAT + 1} columns "
                               "per time")
    _check_range(path, np.array(times, dtype=np.float64) * 1000,
                 np.abs(s).sum(axis=1, dtype=np.float64).max(initial=0.0))
    order = np.argsort(t, kind="stable")
    return MemoryTimeline(path=path, raw=False, t_ns=t[order], sizes=s[order, 1:])


def timeline_from_json(data: bytes | memoryview, path: str) -> MemoryTimeline:
    head = bytes(data[:512]).lower()
    if b"<html" in head or b"<!doctype" in head:
        raise TraceFormatError(f"{path}: the HTML memory timeline holds only a picture; export "
                               "it with a .raw.json.gz (or .json) path instead")
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(one_line(f"{path}: memory timeline is not valid JSON ({exc})")) \
            from None
    if not isinstance(doc, list):
        raise TraceFormatError(f"{path}: not a memory timeline (expected a JSON list)")
    if len(doc) == 2 and all(isinstance(x, list) for x in doc) and \
            (not doc[1] or isinstance(doc[1][0], list)):
        return _plot(doc, path)
    return _raw(doc, path)


def read_memory_timeline(path: str, storage_options: dict[str, Any] | None = None
                         ) -> MemoryTimeline:
    return timeline_from_json(read_source(path, storage_options).data, path)


TIMELINE_SUFFIX = ".memory.raw.json.gz"
_TRACE_SUFFIX = re.compile(r"(\.pt)?\.trace\.json(\.gz)?$|\.json(\.gz)?$")


def timeline_path(trace_path: str) -> str:
    """Where ``profile(..., memory=True)`` writes a trace's memory timeline:
    ``run/host_1.123.pt.trace.json.gz`` -> ``run/host_1.123.memory.raw.json.gz``."""
    return _TRACE_SUFFIX.sub("", trace_path) + TIMELINE_SUFFIX


def find_memory_timeline(trace_path: str) -> MemoryTimeline | None:
    """The memory timeline written beside a local trace, when there is one."""
    if is_url(trace_path):
        return None
    path = timeline_path(trace_path)
    return read_memory_timeline(path) if os.path.isfile(local_path(path)) else None


def timeline_beside(trace: Trace) -> tuple[Trace, MemoryTimeline | None]:
    """The trace and the memory timeline beside it; a timeline that cannot be read is left
    out with a warning on the trace (it is optional: it must not cost the trace's report)."""
    try:
        return trace, find_memory_timeline(trace.meta.path)
    except StepscopeError as exc:
        warning = f"memory timeline left out: {one_line(str(exc))}"
        meta = dataclasses.replace(trace.meta, warnings=(*trace.meta.warnings, warning),
                                   incomplete=True)
        return dataclasses.replace(trace, meta=meta), None
