"""Collective-call rows from decoded Kineto events (the ``Collectives`` table).

Only events that carry collective args, or host ranges named ``gloo:*`` / ``nccl:*`` (the
backend's own record of the call), become rows: one inline test per host/device event picks
them (``_candidates``, no function call per event) and real work is done for the few hundred
rows per trace only.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import msgspec
import numpy as np

from stepscope.formats.kineto.schema import EMPTY_ARGS, Args, Event

BACKEND_PREFIXES = ("gloo:", "nccl:", "rccl:", "mpi:", "ucc:", "xccl:")
_JSON = msgspec.json.Decoder()


def normalise_collective(name: str) -> str:
    """'all_reduce', 'AllReduce', 'allreduce_coalesced' -> 'allreduce'; '_' and case dropped."""
    n = name.lower().replace("_", "")
    for suffix in ("coalesced", "base", "intoTensor".lower()):
        if n.endswith(suffix) and len(n) > len(suffix):
            n = n[: -len(suffix)]
    return n


def _numel(dims: Any) -> int:
    """Elements of the first argument of an ``Input Dims`` list (a tensor or a tensor list)."""
    if not isinstance(dims, list) or not dims:
        return -1
    first = dims[0]
    if isinstance(first, list) and first and all(isinstance(d, int) for d in first):
        return int(np.prod(first, dtype=np.int64))
    if isinstance(first, list) and first and all(isinstance(t, list) for t in first):
        return sum(int(np.prod(t, dtype=np.int64)) for t in first if t)
    return -1


def _first_type(raw: msgspec.Raw) -> str | None:
    if not len(raw):
        return None
    try:
        types = _JSON.decode(raw)
    except msgspec.MsgspecError:
        return None
    if isinstance(types, list) and types and isinstance(types[0], str) and types[0]:
        return types[0]
    return None


def _int_list(raw: msgspec.Raw) -> str | None:
    """``"[64, 64]"`` (Kineto writes the list as a string) or a list -> "[64,64]"; None if
    absent or empty; "?" when present but not a list of integers (the reader keeps that
    apart from an even split)."""
    if not len(raw):
        return None
    try:
        value = _JSON.decode(raw)
        if isinstance(value, str):
            value = _JSON.decode(value) if value.strip() else []
    except msgspec.MsgspecError:
        return "?"
    if isinstance(value, list) and not value:
        return None
    if isinstance(value, list) and all(type(v) is int for v in value):
        return "[" + ",".join(map(str, value)) + "]"
    return "?"


def _row(e: Event, a: Args, on_device: int) -> tuple[Any, ...] | None:
    backend_range = not on_device and e.name.startswith(BACKEND_PREFIXES)
    if a.coll_name is None and a.in_nelems < 0 and not backend_range:
        return None
    coll = a.coll_name
    if coll is None and backend_range:
        coll = e.name.split(":", 1)[1]
    in_n, out_n, dtype = a.in_nelems, a.out_nelems, a.dtype
    if in_n < 0 and (len(a.input_dims) or len(a.input_dims_lc)):
        try:
            in_n = _numel(_JSON.decode(a.input_dims if len(a.input_dims) else a.input_dims_lc))
        except msgspec.MsgspecError:
            in_n = -1
    if dtype is None:
        dtype = _first_type(a.input_types)
    pg = None if a.pg_name is None else str(a.pg_name)
    seq = int(a.seq) if isinstance(a.seq, int) or a.seq.isdigit() else -1
    return (e.ts, e.dur, on_device, e.name, normalise_collective(coll) if coll else None,
            in_n, out_n if out_n >= 0 else in_n, dtype, a.group_size, pg, seq,
            _int_list(a.in_split), _int_list(a.out_split), _int_list(a.pg_ranks))


def process_groups(raw: msgspec.Raw) -> tuple[tuple[str, tuple[int, ...]], ...]:
    """``distributedInfo.pg_config`` as (group name, global ranks); entries without a name or
    an integer rank list are skipped (PyTorch writes ``ranks`` as a list)."""
    if not len(raw):
        return ()
    try:
        groups = _JSON.decode(raw)
    except msgspec.MsgspecError:
        return ()
    out = []
    for g in groups if isinstance(groups, list) else ():
        if not isinstance(g, dict):
            continue
        name, ranks = g.get("pg_name"), g.get("ranks")
        if (isinstance(name, str | int) and isinstance(ranks, list)
                and all(isinstance(r, int) and not isinstance(r, bool) for r in ranks)):
            out.append((str(name), tuple(ranks)))
    return tuple(out)


def _candidates(events: list[Event], on_device: int) -> list[int]:
    """Indices of the events ``_row`` may keep: collective args, or (host) a backend range.

    One list comprehension: each event is touched once (separate ``map(attrgetter)`` passes
    measured slower, every pass missing the cache on every event).
    """
    if on_device:
        return [i for i, e in enumerate(events)
                if (a := e.args) is not None and (a.coll_name is not None or a.in_nelems >= 0)]
    return [i for i, e in enumerate(events)
            if ((a := e.args) is not None and (a.coll_name is not None or a.in_nelems >= 0))
            or e.name.startswith(BACKEND_PREFIXES)]


def collective_rows(
    host: list[Event], device: list[Event], skipped: Counter[str]
) -> list[tuple[Any, ...]]:
    """(ts_us, dur_us, on_device, name, collective, in, out, dtype, group, pg, seq, in_splits,
    out_splits, pg_ranks) per call."""
    rows: list[tuple[Any, ...]] = []
    for on_device, events in ((0, host), (1, device)):
        for i in _candidates(events, on_device):
            e = events[i]
            a = e.args or EMPTY_ARGS
            try:
                row = _row(e, a, on_device)
            except (TypeError, ValueError, OverflowError):
                skipped["malformed collective args"] += 1
                continue
            if row is not None:
                rows.append(row)
    return rows
