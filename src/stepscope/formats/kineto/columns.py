"""Turn a list of decoded Kineto events into per-family numpy columns.

This is the only per-event Python code on the read path, so it is written as C-speed
passes (``map(attrgetter)`` into ``np.fromiter``, list comprehensions) rather than one rich
loop, and anything costlier than reading a field (``str()`` of a pid, ``bytes()`` and
re-encoding of a raw JSON text) is done once per distinct value, not per event. The
chunks are cut by reader.CHUNK_BYTES (16 MB: the size that suits the native scanner, which both
paths share; 4 MB would keep the Structs the passes walk in cache, 27 % less CPU per byte).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.formats.kineto.comms import collective_rows
from stepscope.formats.kineto.schema import EMPTY_ARGS, Args, Event
from stepscope.model.trace import (
    DEV_KERNEL,
    DEV_MEMCPY,
    DEV_MEMSET,
    HOST_ANNOTATION,
    HOST_OP,
    HOST_PYTHON,
    Collectives,
)

Columns = dict[str, npt.NDArray[Any]]

# Event families (F_TRACE spans and NO_FAMILY get no table)
F_HOST, F_RUNTIME, F_DEVICE, F_GPU_ANN, F_SYNC, F_TRACE, F_MEMORY, NO_FAMILY = range(8)
F_COLL = 8  # collective calls: built from the host and device buckets, not a category

# Per family, the columns holding ids into the chunk's string table (remapped on merge).
STRING_COLUMNS: dict[int, tuple[str, ...]] = {
    F_HOST: ("name", "pid", "tid", "input_dims", "call_stack", "input_types", "concrete_inputs",
             "input_strides"),
    F_RUNTIME: ("name", "pid", "tid"),
    F_DEVICE: ("name",),
    F_GPU_ANN: ("name",),
    F_SYNC: ("name",),
    F_MEMORY: ("tid",),
    F_COLL: ("name", "collective", "dtype", "pg", "in_splits", "out_splits", "pg_ranks"),
}

# category (lower-case) -> (family, kind)
CATEGORY_FAMILY: dict[str, tuple[int, int]] = {
    "cpu_op": (F_HOST, HOST_OP),
    "operator": (F_HOST, HOST_OP),
    "user_annotation": (F_HOST, HOST_ANNOTATION),
    "python_function": (F_HOST, HOST_PYTHON),
    "python": (F_HOST, HOST_PYTHON),
    "runtime": (F_RUNTIME, 0),
    "cuda_runtime": (F_RUNTIME, 0),
    "cuda_driver": (F_RUNTIME, 0),
    "hip_runtime": (F_RUNTIME, 0),
    "mtia_runtime": (F_RUNTIME, 0),
    "xpu_runtime": (F_RUNTIME, 0),
    "xpu_driver": (F_RUNTIME, 0),
    "privateuse1_runtime": (F_RUNTIME, 0),
    "privateuse1_driver": (F_RUNTIME, 0),
    "kernel": (F_DEVICE, DEV_KERNEL),
    "mtia_ccp_events": (F_DEVICE, DEV_KERNEL),
    "gpu_memcpy": (F_DEVICE, DEV_MEMCPY),
    "memcpy": (F_DEVICE, DEV_MEMCPY),
    "gpu_memset": (F_DEVICE, DEV_MEMSET),
    "memset": (F_DEVICE, DEV_MEMSET),
    "gpu_user_annotation": (F_GPU_ANN, 0),
    "cuda_sync": (F_SYNC, 0),
    "trace": (F_TRACE, 0),
}
# Categories we recognise but do not need as ranges (flows are replaced by correlation ids).
KNOWN_UNUSED = frozenset(
    {"ac2g", "fwdbwd", "forward_backward", "async", "async_cpu_to_gpu", "flow",
     "cuda_profiler_range", "cpu_instant_event", "overhead", "python_function_instant"}
)

_TS = attrgetter("ts")
_DUR = attrgetter("dur")
_PID = attrgetter("pid")
_TID = attrgetter("tid")

MAX_TS_US = 2.0**62 / 1000.0  # beyond this an int64 ns clock overflows
MAX_DUR_US = 7 * 24 * 3600 * 1e6  # a week: longer is a corrupt record (cf. HTA issue #325)


@dataclass
class Strings:
    """A growing string table (interning)."""

    index: dict[str, int] = field(default_factory=dict)

    def ids(self, values: list[str]) -> npt.NDArray[np.int32]:
        # new strings are added once per distinct value; the per-event lookup runs in C
        table = self.index
        for v in dict.fromkeys(values):
            if v not in table:
                table[v] = len(table)
        return np.fromiter(map(table.__getitem__, values), dtype=np.int32, count=len(values))

    def id(self, value: str) -> int:
        return self.index.setdefault(value, len(self.index))

    def as_list(self) -> list[str]:
        return list(self.index)


@dataclass
class ChunkResult:
    """Columns of one chunk of events, with the chunk's own string table."""

    strings: list[str]
    tables: dict[int, Columns]
    categories: Counter[str]
    skipped: Counter[str]
    trace_spans: list[tuple[int, int]]  # (start_ns, end_ns) of "PyTorch Profiler (N)" spans
    events: int
    # "field: what was done" -> count, for fields of the wrong type coerced or dropped
    repairs: Counter[str] = field(default_factory=Counter)


def us_to_ns(values: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """Float microseconds -> int64 nanoseconds without losing the sub-µs part.

    Splitting off the integral part first keeps the fraction exact even for epoch-sized
    timestamps (~1.7e15 µs), where ``ts * 1000`` alone would round to 256 ns steps.
    """
    whole = np.floor(values)
    frac_ns = np.rint((values - whole) * 1000.0).astype(np.int64)
    return whole.astype(np.int64) * 1000 + frac_ns


_MISSING3 = [-1, -1, -1]


def _padded3(values: list[list[int] | str | None]) -> npt.NDArray[np.int32]:
    # fast path: Kineto writes [x, y, z] or nothing; anything else takes the slow loop
    filled = [v if type(v) is list and len(v) == 3 else (_MISSING3 if v is None else None)
              for v in values]
    if None not in filled:
        try:
            arr = np.array(filled, dtype=np.int64).reshape(len(values), 3)
            return np.clip(arr, -1, 2**31 - 1).astype(np.int32)
        except (OverflowError, ValueError, TypeError):
            pass
    out = np.full((len(values), 3), -1, dtype=np.int64)
    for i, v in enumerate(values):
        if v and not isinstance(v, str):
            n = min(3, len(v))
            out[i, :n] = v[:n]
    return np.clip(out, -1, 2**31 - 1).astype(np.int32)


def _ints(values: list[int] | list[int | str]) -> npt.NDArray[np.int64]:
    arr = np.array(values)
    if arr.dtype != np.int64:  # huge ints become object/uint64: clamp to "missing"
        ints = [as_int(v) if isinstance(v, str) else v for v in values]
        arr = np.array([v if -(2**63) <= v < 2**63 else -1 for v in ints], dtype=np.int64)
    return arr


def _int_field(items: list[Any], get: Callable[[Any], int]) -> npt.NDArray[np.int64]:
    """An ``int``-typed field of every item in one C-speed pass; an int beyond 64 bits
    (msgspec decodes up to uint64) takes ``_ints``' clamping instead."""
    try:
        return np.fromiter(map(get, items), dtype=np.int64, count=len(items))
    except OverflowError:
        return _ints(list(map(get, items)))


def _interned(values: list[Any], strings: Strings,
              text: Callable[[Any], str | None]) -> npt.NDArray[np.int32]:
    """String ids of ``text(v)`` for every value (-1 where it is None), ``text`` called
    once per distinct value, in first-seen order (as ``Strings.ids`` interns)."""
    lut = {v: -1 if (t := text(v)) is None else strings.id(t) for v in dict.fromkeys(values)}
    return np.fromiter(map(lut.__getitem__, values), dtype=np.int32, count=len(values))


_ARGS = attrgetter("args")
_BYTES = attrgetter("bytes")


def _count_string_bytes(events: list[Event], repairs: Counter[str]) -> None:
    """Count "bytes" written as a string (roctracer), one C-speed pass over the args."""
    args = list(filter(None, map(_ARGS, events)))
    if str in set(map(type, map(_BYTES, args))):
        n = sum(isinstance(b, str) for b in map(_BYTES, args))
        repairs["args.bytes: string -> integer"] += n


def float32_column(values: list[float] | npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.array(values, dtype=np.float64)
        arr[~np.isfinite(arr)] = np.nan
        return arr.astype(np.float32)


def _times(
    events: list[Event], skipped: Counter[str], need_dur: bool
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Validated start and duration columns; returns (keep mask, ts_ns, dur_ns)."""
    n = len(events)
    ts = np.fromiter(map(_TS, events), dtype=np.float64, count=n)
    dur = np.fromiter(map(_DUR, events), dtype=np.float64, count=n) if need_dur else np.zeros(n)
    return checked_times(ts, dur, skipped)


def checked_times(
    ts: npt.NDArray[np.float64], dur: npt.NDArray[np.float64], skipped: Counter[str]
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """(keep mask, ts_ns, dur_ns) from float µs; invalid rows counted in ``skipped``."""
    with np.errstate(invalid="ignore"):
        bad_ts = ~np.isfinite(ts) | (ts < 0) | (ts > MAX_TS_US)
        missing_dur = np.isnan(dur)
        negative = dur < 0
        absurd = ~missing_dur & ((dur > MAX_DUR_US) | np.isinf(dur))
    keep = ~(bad_ts | missing_dur | negative | absurd)
    for reason, mask in (
        ("missing or invalid timestamp", bad_ts),
        ("missing duration", missing_dur & ~bad_ts),
        ("negative duration", negative & ~bad_ts),
        ("absurd duration (> 7 days)", absurd & ~bad_ts),
    ):
        n = int(mask.sum())
        if n:
            skipped[reason] += n
    ts_ns = us_to_ns(np.where(keep, ts, 0.0))
    dur_ns = np.rint(np.where(keep, dur, 0.0) * 1000.0).astype(np.int64)
    return keep, ts_ns, dur_ns


def compact_json(text: bytes) -> str:
    try:
        return msgspec.json.encode(msgspec.json.decode(text)).decode()
    except (msgspec.DecodeError, UnicodeDecodeError):
        return text.decode("utf-8", "replace")


def _raw_json_ids(args: list[Args], get: Callable[[Args], Any],
                  strings: Strings) -> npt.NDArray[np.int32]:
    """Intern raw JSON texts, re-encoded compactly (-1 when absent); once per distinct text."""
    return _interned(list(map(bytes, map(get, args))), strings,
                     lambda d: compact_json(d) if d else None)


def dims_text(d: bytes) -> str | None:
    # without its blanks: a pretty-printed trace spreads one shape over several lines
    return d.translate(None, b" \t\r\n").decode("utf-8", "replace") if d else None


def _str_or_none(v: str | None) -> str | None:
    return v


_EXT = attrgetter("external_id")
_EXT_LC = attrgetter("external_id_lc")
_CORR = attrgetter("correlation")
_DIMS = attrgetter("input_dims")
_DIMS_LC = attrgetter("input_dims_lc")
_TYPES = attrgetter("input_types")
_CONCRETE = attrgetter("concrete_inputs")
_STRIDES = attrgetter("input_strides")
_STACK = attrgetter("call_stack")
_NAME = attrgetter("name")
_GRID = attrgetter("grid")
_BLOCK = attrgetter("block")
_PER_SM = attrgetter("blocks_per_sm")
_OCCUPANCY = attrgetter("occupancy")
_REGISTERS = attrgetter("registers")
_SHARED_MEM = attrgetter("shared_memory")


def _args(events: list[Event]) -> list[Args]:
    return [e.args or EMPTY_ARGS for e in events]


def _external_ids(args: list[Args]) -> npt.NDArray[np.int64]:
    return np.maximum(_int_field(args, _EXT), _int_field(args, _EXT_LC))


def _thread_ids(events: list[Event], get: Callable[[Event], int | str],
                strings: Strings) -> npt.NDArray[np.int32]:
    """pid/tid as written (int or str) -> id of its text; str() once per distinct value."""
    return _interned(list(map(get, events)), strings, str)


def _host(
    events: list[Event], kinds: npt.NDArray[np.int8], strings: Strings, skipped: Counter[str]
) -> Columns:
    keep, ts, dur = _times(events, skipped, True)
    args = _args(events)
    ext = _external_ids(args)
    # the same shapes repeat: each distinct JSON text is decoded and interned once
    dims_raw = list(map(bytes, map(_DIMS, args)))
    if any(map(len, map(_DIMS_LC, args))):  # "Input dims" (older spelling) somewhere
        dims_raw = [d or bytes(a.input_dims_lc) for d, a in zip(dims_raw, args, strict=True)]
    dims = _interned(dims_raw, strings, dims_text)
    types = _raw_json_ids(args, _TYPES, strings)
    concrete = _raw_json_ids(args, _CONCRETE, strings)
    strides = _raw_json_ids(args, _STRIDES, strings)
    stacks = _interned(list(map(_STACK, args)), strings, _str_or_none)
    cols: Columns = {
        "name": strings.ids(list(map(_NAME, events))),
        "ts": ts, "dur": dur,
        "pid": _thread_ids(events, _PID, strings),
        "tid": _thread_ids(events, _TID, strings),
        "kind": np.array(kinds, dtype=np.int8),
        "external_id": ext, "input_dims": dims, "call_stack": stacks,
        "input_types": types, "concrete_inputs": concrete, "input_strides": strides,
    }
    return {k: v[keep] for k, v in cols.items()}


def _runtime(events: list[Event], strings: Strings, skipped: Counter[str]) -> Columns:
    keep, ts, dur = _times(events, skipped, True)
    args = _args(events)
    cols: Columns = {
        "name": strings.ids(list(map(_NAME, events))),
        "ts": ts, "dur": dur,
        "pid": _thread_ids(events, _PID, strings),
        "tid": _thread_ids(events, _TID, strings),
        "correlation": _int_field(args, _CORR),
        "external_id": _external_ids(args),
    }
    return {k: v[keep] for k, v in cols.items()}


def as_int(value: int | str) -> int:
    if isinstance(value, int):
        return value
    try:
        return int(value, 0)
    except ValueError:
        return -1


def _device_and_stream(events: list[Event], args: list[Any]) -> tuple[npt.NDArray[np.int64], ...]:
    device = _ints([a.device if a.device != -1 else (e.pid if isinstance(e.pid, int) else -1)
                    for e, a in zip(events, args, strict=True)])
    stream = _ints([as_int(a.stream) if a.stream != -1 else
                    (e.tid if isinstance(e.tid, int) else -1)
                    for e, a in zip(events, args, strict=True)])
    return device, stream


def _device(
    events: list[Event], kinds: npt.NDArray[np.int8], strings: Strings, skipped: Counter[str]
) -> Columns:
    keep, ts, dur = _times(events, skipped, True)
    args = _args(events)
    device, stream = _device_and_stream(events, args)
    grid = _padded3(list(map(_GRID, args)))
    block = _padded3(list(map(_BLOCK, args)))
    cols: Columns = {
        "name": strings.ids(list(map(_NAME, events))),
        "ts": ts, "dur": dur,
        "kind": np.array(kinds, dtype=np.int8),
        "device": np.clip(device, -1, 2**31 - 1),
        "stream": stream,
        "correlation": _int_field(args, _CORR),
        "external_id": _external_ids(args),
        "blocks_per_sm": float32_column(list(map(_PER_SM, args))),
        "occupancy_pct": float32_column(list(map(_OCCUPANCY, args))),
        "grid_x": grid[:, 0], "grid_y": grid[:, 1], "grid_z": grid[:, 2],
        "block_x": block[:, 0], "block_y": block[:, 1], "block_z": block[:, 2],
        "registers": np.clip(_int_field(args, _REGISTERS), -1, 2**31 - 1),
        "shared_mem": _int_field(args, _SHARED_MEM),
        "bytes": _ints(list(map(_BYTES, args))),
    }
    return {k: v[keep] for k, v in cols.items()}


def _ranges_on_device(events: list[Event], strings: Strings, skipped: Counter[str],
                      with_correlation: bool) -> Columns:
    keep, ts, dur = _times(events, skipped, True)
    args = _args(events)
    device, stream = _device_and_stream(events, args)
    cols: Columns = {
        "name": strings.ids(list(map(_NAME, events))),
        "ts": ts, "dur": dur,
        "device": np.clip(device, -1, 2**31 - 1), "stream": stream,
    }
    if with_correlation:
        cols["correlation"] = _int_field(args, _CORR)
    return {k: v[keep] for k, v in cols.items()}


def _memory(events: list[Event], strings: Strings, skipped: Counter[str]) -> Columns:
    keep, ts, _ = _times(events, skipped, False)
    args = _args(events)
    cols: Columns = {
        "ts": ts,
        "device_type": np.clip(_ints([a.device_type for a in args]), -1, 2**31 - 1),
        "device_id": np.clip(_ints([a.device_id for a in args]), -1, 2**31 - 1),
        "bytes": _ints([a.mem_bytes for a in args]),
        "addr": _ints([a.addr for a in args]),
        "total_allocated": _ints([a.total_allocated for a in args]),
        "total_reserved": _ints([a.total_reserved for a in args]),
        "tid": strings.ids(list(map(str, map(_TID, events)))),
    }
    return {k: v[keep] for k, v in cols.items()}


_PH = attrgetter("ph")
_CAT = attrgetter("cat")
_IS_X = "X".__eq__


def collectives_table(
    host: list[Event], device: list[Event], strings: Strings, skipped: Counter[str]
) -> Columns:
    rows = collective_rows(host, device, skipped)
    if not rows:
        return {k: np.empty(0, dtype=v) for k, v in Collectives.DTYPES.items()}
    (ts_us, dur_us, on_dev, names, colls, ins, outs, dtypes, groups, pgs, seqs, in_splits,
     out_splits, pg_ranks) = zip(*rows, strict=True)
    ts = np.array(ts_us, dtype=np.float64)
    dur = np.array(dur_us, dtype=np.float64)
    keep = np.isfinite(ts) & np.isfinite(dur) & (ts >= 0) & (dur >= 0) & (ts < MAX_TS_US)
    def sid(values: tuple[str | None, ...]) -> npt.NDArray[np.int32]:
        return np.array([-1 if v is None else strings.id(v) for v in values], dtype=np.int32)
    cols: Columns = {
        "ts": us_to_ns(np.where(keep, ts, 0.0)),
        "dur": np.rint(np.where(keep, dur, 0.0) * 1000.0).astype(np.int64),
        "on_device": np.array(on_dev, dtype=np.int8),
        "name": sid(names), "collective": sid(colls),
        "in_nelems": _ints(list(ins)), "out_nelems": _ints(list(outs)),
        "dtype": sid(dtypes),
        "group_size": np.clip(_ints(list(groups)), -1, 2**31 - 1).astype(np.int32),
        "pg": sid(pgs),
        "seq": _ints(list(seqs)),
        "in_splits": sid(in_splits), "out_splits": sid(out_splits), "pg_ranks": sid(pg_ranks),
    }
    return {k: v[keep] for k, v in cols.items()}


def build_chunk(events: list[Event]) -> ChunkResult:
    """Split events by family and build their columns.

    The split is vectorised: one C-speed pass per attribute (``map(attrgetter)``), the
    family of each distinct category looked up once, then numpy masks pick the buckets.
    """
    n = len(events)
    cats = list(map(_CAT, events))
    phs = list(map(_PH, events))
    categories: Counter[str] = Counter(cats)
    ph_count = Counter(phs)
    skipped: Counter[str] = Counter()
    fam_of: dict[str, int] = {}
    kind_of: dict[str, int] = {}
    for cat in categories:
        fam = CATEGORY_FAMILY.get(cat.lower())
        fam_of[cat], kind_of[cat] = fam if fam is not None else (NO_FAMILY, 0)
    code = np.fromiter(map(fam_of.__getitem__, cats), dtype=np.int8, count=n)
    is_x = np.fromiter(map(_IS_X, phs), dtype=np.bool_, count=n)
    unknown_idx = np.flatnonzero(is_x & (code == NO_FAMILY))
    if len(unknown_idx):
        for cat, k in Counter(map(cats.__getitem__, unknown_idx.tolist())).items():
            if cat.lower() not in KNOWN_UNUSED:
                skipped[f"unknown category {cat!r}"] += k
    code[~is_x] = NO_FAMILY
    if ph_count.get("i") or ph_count.get("I"):
        for i in np.flatnonzero(~is_x).tolist():
            e = events[i]
            if (e.ph == "i" or e.ph == "I") and e.name == "[memory]":
                code[i] = F_MEMORY
    n_be = ph_count.get("B", 0) + ph_count.get("E", 0)
    if n_be:
        skipped["begin/end (B/E) events, not written by PyTorch"] += n_be
    buckets: dict[int, list[Event]] = {}
    kinds: dict[int, npt.NDArray[np.int8]] = {}
    kind_arr = None
    for f in range(NO_FAMILY):
        idx = np.flatnonzero(code == f)
        buckets[f] = list(map(events.__getitem__, idx.tolist()))
        if f in (F_HOST, F_DEVICE):
            if kind_arr is None:
                kind_arr = np.fromiter(map(kind_of.__getitem__, cats), dtype=np.int8, count=n)
            kinds[f] = kind_arr[idx]
    strings = Strings()
    tables: dict[int, Columns] = {
        F_HOST: _host(buckets[F_HOST], kinds[F_HOST], strings, skipped),
        F_RUNTIME: _runtime(buckets[F_RUNTIME], strings, skipped),
        F_DEVICE: _device(buckets[F_DEVICE], kinds[F_DEVICE], strings, skipped),
        F_GPU_ANN: _ranges_on_device(buckets[F_GPU_ANN], strings, skipped, False),
        F_SYNC: _ranges_on_device(buckets[F_SYNC], strings, skipped, True),
        F_MEMORY: _memory(buckets[F_MEMORY], strings, skipped),
        F_COLL: collectives_table(buckets[F_HOST], buckets[F_DEVICE], strings, skipped),
    }
    repairs: Counter[str] = Counter()
    _count_string_bytes(buckets[F_RUNTIME], repairs)
    _count_string_bytes(buckets[F_DEVICE], repairs)
    return ChunkResult(strings.as_list(), tables, categories, skipped,
                       trace_spans(buckets[F_TRACE]), len(events), repairs)


def trace_spans(events: list[Event]) -> list[tuple[int, int]]:
    """(start_ns, end_ns) of the profiler's own "PyTorch Profiler (N)" spans."""
    if not events:
        return []
    keep, ts, dur = _times(events, Counter(), True)
    return [(int(t), int(t + d)) for t, d, k in zip(ts, dur, keep, strict=True) if k]
