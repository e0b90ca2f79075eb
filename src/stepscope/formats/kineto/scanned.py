"""A chunk's columns from the native scanner's output (scan.py): ``columns.build_chunk``'s
result, bit for bit, without a Python object per event.

Every family is built from the scanned columns with numpy, each function mirroring its
namesake in columns.py; only the few events whose tables columns.py builds from Events
(collective candidates: a few hundred per trace; the profiler's own spans) are decoded by
msgspec from their bytes, so those semantics live in one place. Strings are added to the
chunk's table in the order build_chunk adds them (each field's distinct values in
first-seen order), so the string ids are the same too; the tests compare both paths on real
and generated traces.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.formats.kineto.columns import (
    CATEGORY_FAMILY,
    F_COLL,
    F_DEVICE,
    F_GPU_ANN,
    F_HOST,
    F_MEMORY,
    F_RUNTIME,
    F_SYNC,
    F_TRACE,
    KNOWN_UNUSED,
    NO_FAMILY,
    ChunkResult,
    Columns,
    Strings,
    as_int,
    checked_times,
    collectives_table,
    compact_json,
    dims_text,
    float32_column,
    trace_spans,
)
from stepscope.formats.kineto.comms import BACKEND_PREFIXES
from stepscope.formats.kineto.scan import (
    T_ABSENT,
    T_OBJ,
    T_STR,
    Declined,
    Scanned,
    first_seen,
    scan,
)
from stepscope.formats.kineto.schema import Event

_EVENTS = msgspec.json.Decoder(list[Event])
_INT64 = (-(2**63), 2**63)

Ints = npt.NDArray[np.int64]


def scanned_chunk(piece: bytes | memoryview) -> ChunkResult | None:
    """The chunk's columns through the native scanner; None when it is not built or
    declines the chunk (the caller decodes it the Python way)."""
    scanned = scan(piece)
    if scanned is None:
        return None
    try:
        return _build(scanned)
    except (Declined, OverflowError, ValueError):
        return None


def _interned(keys: npt.NDArray[np.int32], nkeys: int, text: Callable[[int], str | None],
              strings: Strings) -> npt.NDArray[np.int32]:
    """String ids of ``text(key)`` per key (keys in [-1, nkeys); -1 where text is None),
    added in the keys' first-seen order, as columns._interned and Strings.ids add them."""
    if not len(keys):
        return np.empty(0, dtype=np.int32)
    shifted = keys.astype(np.int32) + 1
    lut = np.full(nkeys + 1, -1, dtype=np.int32)
    for k in first_seen(shifted, nkeys + 1):
        t = text(k - 1)
        if t is not None:
            lut[k] = strings.id(t)
    return lut[shifted]


class _Chunk:
    """The scanned columns of a chunk, with the per-string lookups its tables need."""

    def __init__(self, s: Scanned) -> None:
        self.s = s
        self.strings = Strings()

    def col(self, field: str, idx: npt.NDArray[np.intp]) -> Ints:
        values: Ints = self.s.vals[field][idx]
        return values

    def text(self, sid: int) -> str | None:
        return None if sid < 0 else self.s.text(sid)

    def texts_of(self, field: str, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.int32]:
        """A str field (name): ids of its text, as Strings.ids."""
        return _interned(self.s.sids[field][idx], len(self.s.raw), self.text, self.strings)

    def raw_ids(self, sids: npt.NDArray[np.int32],
                text: Callable[[bytes], str | None]) -> npt.NDArray[np.int32]:
        raw = self.s.raw
        return _interned(sids, len(raw), lambda k: None if k < 0 else text(raw[k]),
                         self.strings)

    def thread_ids(self, field: str, idx: npt.NDArray[np.intp]) -> npt.NDArray[np.int32]:
        """pid/tid as written (int or str) -> id of its text (columns._thread_ids). The
        scanner interns an int's digits too, so each distinct value is a small key:
        0 when absent (-1), else 2 * string id + (1 for a string, 0 for an int)."""
        if not len(idx):
            return np.empty(0, dtype=np.int32)
        tags, sids = self.s.tags[field][idx], self.s.sids[field][idx]
        keys = np.where(tags == T_ABSENT, 0, 2 + 2 * sids + (tags == T_STR))
        nkeys = 2 + 2 * len(self.s.raw)
        lut = np.empty(nkeys, dtype=np.int32)
        for k in first_seen(keys.astype(np.int32), nkeys):
            if k == 0:
                text = "-1"
            elif k % 2:
                text = self.s.text((k - 2) // 2)
            else:
                text = str(int(self.s.raw[(k - 2) // 2]))
            lut[k] = self.strings.id(text)
        return lut[keys]

    def int_or_none(self, field: str, idx: npt.NDArray[np.intp]) -> Ints:
        """An ``int | str`` field's int where it is one, else -1 (``isinstance(v, int)``)."""
        return np.where(self.s.tags[field][idx] == T_STR, -1, self.col(field, idx))

    def as_ints(self, field: str, idx: npt.NDArray[np.intp]) -> Ints:
        """An ``int | str`` field as columns._ints reads it: a string through as_int (once
        per distinct string), and a value beyond int64 as -1."""
        out: Ints = self.col(field, idx).copy()
        is_str = self.s.tags[field][idx] == T_STR
        if is_str.any():
            uniq, inverse = np.unique(self.s.sids[field][idx][is_str], return_inverse=True)
            values = [as_int(self.s.text(sid)) for sid in uniq.tolist()]
            out[is_str] = np.array([v if _INT64[0] <= v < _INT64[1] else -1 for v in values],
                                   dtype=np.int64)[inverse.reshape(-1)]
        return out

    def device_and_stream(self, idx: npt.NDArray[np.intp]) -> tuple[Ints, Ints]:
        """columns._device_and_stream: the args' device, else an int pid; the args' stream
        (a string through as_int), else an int tid; -1 where neither."""
        arg_device = self.col("device", idx)
        device = np.where(arg_device != -1, arg_device, self.int_or_none("pid", idx))
        stream = self.as_ints("stream", idx)
        written = (self.s.tags["stream"][idx] == T_STR) | (stream != -1)
        return device, np.where(written, stream, self.int_or_none("tid", idx))

    def times(self, idx: npt.NDArray[np.intp], skipped: Counter[str]) -> tuple[
            npt.NDArray[np.bool_], Ints, Ints]:
        return checked_times(self.s.floats("ts")[idx], self.s.floats("dur")[idx], skipped)

    def external_ids(self, idx: npt.NDArray[np.intp]) -> Ints:
        return np.maximum(self.col("external_id", idx), self.col("external_id_lc", idx))

    def events(self, idx: npt.NDArray[np.intp]) -> list[Event]:
        """The events at ``idx`` decoded by msgspec: for the few whose tables are built from
        Events (collective candidates, profiler spans)."""
        return _EVENTS.decode(self.s.events_json(idx)) if len(idx) else []


def _host(c: _Chunk, idx: npt.NDArray[np.intp], kinds: npt.NDArray[np.int8],
          skipped: Counter[str]) -> Columns:
    keep, ts, dur = c.times(idx, skipped)
    sids = c.s.sids
    dims = sids["input_dims"][idx]
    dims_lc = sids["input_dims_lc"][idx]
    if (dims_lc >= 0).any():  # "Input dims" (older spelling) somewhere
        dims = np.where(dims >= 0, dims, dims_lc)
    # interned in columns._host's order: the string table's ids depend on it
    input_dims = c.raw_ids(dims, dims_text)
    types, concrete, strides = (c.raw_ids(sids[f][idx], compact_json)
                                for f in ("input_types", "concrete_inputs", "input_strides"))
    stacks = _interned(sids["call_stack"][idx], len(c.s.raw), c.text, c.strings)
    cols: Columns = {
        "name": c.texts_of("name", idx), "ts": ts, "dur": dur,
        "pid": c.thread_ids("pid", idx), "tid": c.thread_ids("tid", idx),
        "kind": np.array(kinds, dtype=np.int8), "external_id": c.external_ids(idx),
        "input_dims": input_dims, "call_stack": stacks, "input_types": types,
        "concrete_inputs": concrete, "input_strides": strides,
    }
    return {k: v[keep] for k, v in cols.items()}


def _runtime(c: _Chunk, idx: npt.NDArray[np.intp], skipped: Counter[str]) -> Columns:
    keep, ts, dur = c.times(idx, skipped)
    cols: Columns = {
        "name": c.texts_of("name", idx), "ts": ts, "dur": dur,
        "pid": c.thread_ids("pid", idx), "tid": c.thread_ids("tid", idx),
        "correlation": c.col("correlation", idx), "external_id": c.external_ids(idx),
    }
    return {k: v[keep] for k, v in cols.items()}


def _device(c: _Chunk, idx: npt.NDArray[np.intp], kinds: npt.NDArray[np.int8],
            skipped: Counter[str]) -> Columns:
    keep, ts, dur = c.times(idx, skipped)
    device, stream = c.device_and_stream(idx)
    grid = np.clip(c.s.grid[idx], -1, 2**31 - 1).astype(np.int32)
    block = np.clip(c.s.block[idx], -1, 2**31 - 1).astype(np.int32)
    cols: Columns = {
        "name": c.texts_of("name", idx), "ts": ts, "dur": dur,
        "kind": np.array(kinds, dtype=np.int8),
        "device": np.clip(device, -1, 2**31 - 1),
        "stream": stream,
        "correlation": c.col("correlation", idx),
        "external_id": c.external_ids(idx),
        "blocks_per_sm": float32_column(c.s.floats("blocks_per_sm")[idx]),
        "occupancy_pct": float32_column(c.s.floats("occupancy")[idx]),
        "grid_x": grid[:, 0], "grid_y": grid[:, 1], "grid_z": grid[:, 2],
        "block_x": block[:, 0], "block_y": block[:, 1], "block_z": block[:, 2],
        "registers": np.clip(c.col("registers", idx), -1, 2**31 - 1),
        "shared_mem": c.col("shared_memory", idx),
        "bytes": c.as_ints("bytes", idx),
    }
    return {k: v[keep] for k, v in cols.items()}


def _ranges_on_device(c: _Chunk, idx: npt.NDArray[np.intp], skipped: Counter[str],
                      with_correlation: bool) -> Columns:
    """columns._ranges_on_device: GPU annotations, and syncs (with their correlation)."""
    keep, ts, dur = c.times(idx, skipped)
    device, stream = c.device_and_stream(idx)
    cols: Columns = {
        "name": c.texts_of("name", idx), "ts": ts, "dur": dur,
        "device": np.clip(device, -1, 2**31 - 1), "stream": stream,
    }
    if with_correlation:
        cols["correlation"] = c.col("correlation", idx)
    return {k: v[keep] for k, v in cols.items()}


def _memory(c: _Chunk, idx: npt.NDArray[np.intp], skipped: Counter[str]) -> Columns:
    """columns._memory: the ``[memory]`` records (instants: no duration is read)."""
    keep, ts, _ = checked_times(c.s.floats("ts")[idx], np.zeros(len(idx)), skipped)
    cols: Columns = {
        "ts": ts,
        "device_type": np.clip(c.col("device_type", idx), -1, 2**31 - 1),
        "device_id": np.clip(c.col("device_id", idx), -1, 2**31 - 1),
        "bytes": c.col("mem_bytes", idx),
        "addr": c.col("addr", idx),
        "total_allocated": c.col("total_allocated", idx),
        "total_reserved": c.col("total_reserved", idx),
        "tid": c.thread_ids("tid", idx),
    }
    return {k: v[keep] for k, v in cols.items()}


def _lut(c: _Chunk, sids: npt.NDArray[np.int32], test: Callable[[str], bool]) -> npt.NDArray[
        np.bool_]:
    """test(text) per event, evaluated once per distinct string id."""
    present = np.zeros(len(c.s.raw), dtype=bool)
    present[sids] = True
    hits = np.zeros(len(c.s.raw), dtype=bool)
    for sid in np.flatnonzero(present).tolist():
        hits[sid] = test(c.s.text(sid))
    return hits[sids]


def _first_seen_counts(c: _Chunk, sids: npt.NDArray[np.int32]) -> Counter[str]:
    """Counter(texts) with the texts in first-seen order, as Counter(list) builds it."""
    out: Counter[str] = Counter()
    counts = np.bincount(sids, minlength=len(c.s.raw))
    for sid in first_seen(sids, len(c.s.raw)):
        out[c.s.text(sid)] += int(counts[sid])
    return out


def _build(s: Scanned) -> ChunkResult:
    """columns.build_chunk, step for step, on scanned columns."""
    c = _Chunk(s)
    cat_sids, ph_sids = s.sids["cat"], s.sids["ph"]
    categories = _first_seen_counts(c, cat_sids)
    ph_count = _first_seen_counts(c, ph_sids)
    skipped: Counter[str] = Counter()
    fam_lut = np.full(len(s.raw), NO_FAMILY, dtype=np.int8)
    kind_lut = np.zeros(len(s.raw), dtype=np.int8)
    for sid in first_seen(cat_sids, len(s.raw)):
        fam_lut[sid], kind_lut[sid] = CATEGORY_FAMILY.get(s.text(sid).lower(), (NO_FAMILY, 0))
    code = fam_lut[cat_sids]
    is_x = _lut(c, ph_sids, "X".__eq__)
    unknown = np.flatnonzero(is_x & (code == NO_FAMILY))
    for cat, k in _first_seen_counts(c, cat_sids[unknown]).items():
        if cat.lower() not in KNOWN_UNUSED:
            skipped[f"unknown category {cat!r}"] += k
    code[~is_x] = NO_FAMILY
    if ph_count.get("i") or ph_count.get("I"):
        instant = _lut(c, ph_sids, lambda ph: ph in ("i", "I"))
        memory = instant & _lut(c, s.sids["name"], "[memory]".__eq__)
        code[memory & ~is_x] = F_MEMORY
    n_be = ph_count.get("B", 0) + ph_count.get("E", 0)
    if n_be:
        skipped["begin/end (B/E) events, not written by PyTorch"] += n_be
    idx = {f: np.flatnonzero(code == f) for f in range(NO_FAMILY)}
    kinds = kind_lut[cat_sids]
    tables: dict[int, Columns] = {
        F_HOST: _host(c, idx[F_HOST], kinds[idx[F_HOST]], skipped),
        F_RUNTIME: _runtime(c, idx[F_RUNTIME], skipped),
        F_DEVICE: _device(c, idx[F_DEVICE], kinds[idx[F_DEVICE]], skipped),
        F_GPU_ANN: _ranges_on_device(c, idx[F_GPU_ANN], skipped, False),
        F_SYNC: _ranges_on_device(c, idx[F_SYNC], skipped, True),
        F_MEMORY: _memory(c, idx[F_MEMORY], skipped),
        F_COLL: collectives_table(c.events(_collective_candidates(c, idx[F_HOST], False)),
                                  c.events(_collective_candidates(c, idx[F_DEVICE], True)),
                                  c.strings, skipped),
    }
    repairs: Counter[str] = Counter()
    for fam in (F_RUNTIME, F_DEVICE):
        args = s.tags["args"][idx[fam]] == T_OBJ
        n_str = int(np.count_nonzero(args & (s.tags["bytes"][idx[fam]] == T_STR)))
        if n_str:
            repairs["args.bytes: string -> integer"] += n_str
    return ChunkResult(c.strings.as_list(), tables, categories, skipped,
                       trace_spans(c.events(idx[F_TRACE])), s.n, repairs)


def _collective_candidates(c: _Chunk, idx: npt.NDArray[np.intp],
                           on_device: bool) -> npt.NDArray[np.intp]:
    """The events comms._candidates would pick, in order: collective args or (host) a
    backend's own range (``nccl:all_reduce``)."""
    s = c.s
    has = (s.tags["args"][idx] == T_OBJ) & (
        (s.tags["coll_name"][idx] == T_STR) | (s.vals["in_nelems"][idx] >= 0))
    if not on_device:
        has |= _lut(c, s.sids["name"][idx], lambda n: n.startswith(BACKEND_PREFIXES))
    picked: npt.NDArray[np.intp] = idx[has]
    return picked

