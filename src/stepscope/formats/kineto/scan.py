"""The native event scanner (scan.c, built into ``_scan.so``), through ctypes.

``scan(piece)`` returns the chunk's fields as numpy columns (``Scanned``), or None when the
scanner is not built or declines the chunk (anything it is not sure msgspec would decode
the same way); the reader then decodes that chunk in Python. ``STEPSCOPE_NO_NATIVE=1``
turns it off (the tests compare both paths).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope import nativelib

LIBRARY = Path(__file__).with_name("_scan.so")

# field ids, in scan.c's order
FIELDS = (
    "ph", "cat", "name", "ts", "dur", "pid", "tid", "args",
    "external_id", "external_id_lc", "correlation", "stream", "device", "blocks_per_sm",
    "occupancy", "grid", "block", "registers", "shared_memory", "bytes", "input_dims",
    "input_dims_lc", "input_types", "concrete_inputs", "input_strides", "call_stack",
    "device_type", "device_id", "mem_bytes", "addr", "total_allocated", "total_reserved",
    "coll_name", "in_nelems", "out_nelems", "group_size", "dtype", "pg_name", "seq",
    "in_split", "out_split", "pg_ranks",
)
# tags (scan.c): what each event's field held
T_ABSENT, T_NULL, T_INT, T_STR, T_FLOAT, T_LIST, T_RAW, T_OBJ = range(8)
_HAS_ESCAPE = 1

_P = ctypes.c_void_p


def _load() -> ctypes.CDLL | None:
    # a stale build of another scan.c: its field count differs (ks_fields)
    lib = nativelib.load(LIBRARY, "ks_fields", len(FIELDS))
    if lib is None:
        return None
    lib.ks_new.restype = _P
    lib.ks_free.argtypes = [_P]
    lib.ks_scan.argtypes = [_P, _P, ctypes.c_int64]
    lib.ks_scan.restype = ctypes.c_int64
    for fn in ("ks_tag", "ks_val", "ks_sid", "ks_list3"):
        getattr(lib, fn).argtypes = [_P, ctypes.c_int]
        getattr(lib, fn).restype = _P
    lib.ks_span.argtypes = [_P]
    lib.ks_span.restype = _P
    lib.ks_strings.argtypes = [_P, ctypes.POINTER(ctypes.c_int64)]
    lib.ks_strings.restype = _P
    lib.ks_first_seen.argtypes = [_P, ctypes.c_int64, ctypes.c_int64, _P]
    lib.ks_first_seen.restype = ctypes.c_int64
    return lib


_LIB = _load()


def available() -> bool:
    return _LIB is not None


def _view(ptr: int | None, n: int, dtype: Any) -> npt.NDArray[Any]:
    """A read-only numpy view of scanner memory (valid until the next scan or release)."""
    if not n or not ptr:
        return np.empty(0, dtype=dtype)
    size = n * np.dtype(dtype).itemsize
    view = np.frombuffer((ctypes.c_char * size).from_address(ptr), dtype=dtype)
    view.flags.writeable = False
    return view


class Declined(Exception):
    """A string the scanner passed that Python cannot decode: the chunk goes the slow way."""


@dataclass
class Scanned:
    """One chunk's events as columns: per field a tag (T_*), an int64 value (float fields
    hold the double's bits) and a string id into ``raw`` (the distinct byte strings: a
    string's bytes between its quotes, or a raw field's JSON text); ``span`` is each
    event's [start, end) in ``piece``."""

    piece: memoryview
    n: int
    tags: dict[str, npt.NDArray[np.int8]]
    vals: dict[str, npt.NDArray[np.int64]]
    sids: dict[str, npt.NDArray[np.int32]]
    grid: npt.NDArray[np.int64]  # (n, 3): a list's first 3 values, -1 beyond it or none
    block: npt.NDArray[np.int64]
    span: npt.NDArray[np.int64]  # (n, 2)
    raw: list[bytes]
    escaped: npt.NDArray[np.bool_]
    _texts: dict[int, str] = field(default_factory=dict)

    def floats(self, name: str) -> npt.NDArray[np.float64]:
        """A float field (ts, dur, blocks per SM, occupancy): its values, NaN where absent."""
        return self.vals[name].view(np.float64)

    def text(self, sid: int) -> str:
        """The decoded string of id ``sid`` (raises Declined when msgspec would not)."""
        got = self._texts.get(sid)
        if got is None:
            raw = self.raw[sid]
            try:
                got = (msgspec.json.decode(b'"' + raw + b'"') if self.escaped[sid]
                       else raw.decode("utf-8"))
            except (msgspec.MsgspecError, UnicodeDecodeError) as exc:
                raise Declined from exc
            if not isinstance(got, str):
                raise Declined
            self._texts[sid] = got
        return got

    def events_json(self, idx: npt.NDArray[np.intp]) -> bytes:
        """The events at ``idx`` as one JSON array, to decode the rare families with msgspec."""
        piece, span = self.piece, self.span
        return b"[" + b",".join([bytes(piece[s:e]) for s, e in span[idx].tolist()]) + b"]"


def first_seen(keys: npt.NDArray[np.int32], nkeys: int) -> list[int]:
    """The distinct values of ``keys`` (each in [0, nkeys)) in first-seen order."""
    assert _LIB is not None
    keys = np.ascontiguousarray(keys, dtype=np.int32)
    out = np.empty(min(len(keys), nkeys), dtype=np.int32)
    m = int(_LIB.ks_first_seen(keys.ctypes.data, len(keys), nkeys, out.ctypes.data))
    if m < 0:
        raise ValueError("first_seen: a key out of range")
    seen: list[int] = out[:m].tolist()
    return seen


# One scanner per process, reused from chunk to chunk: fresh arrays for every chunk cost
# a page fault per 4 KB (a fifth of the scan). Forked workers inherit it copy-on-write.
_HANDLE: list[int] = []


def release() -> None:
    """Free this process's scanner memory (the reader calls it after each read)."""
    if _HANDLE and _LIB is not None:
        _LIB.ks_free(_HANDLE.pop())


def scan(piece: bytes | memoryview) -> Scanned | None:
    """The chunk's columns, or None (no scanner, or it declined the chunk). The columns
    are views of the scanner's memory: valid until the next ``scan`` or ``release``, so
    whatever outlives the chunk must be a copy (as every table column is: ``col[keep]``)."""
    lib = _LIB
    if lib is None:
        return None
    if not _HANDLE:
        handle = lib.ks_new()
        if not handle:
            return None
        _HANDLE.append(handle)
    handle = _HANDLE[0]
    buffer = np.frombuffer(piece, dtype=np.uint8)
    n = int(lib.ks_scan(handle, buffer.ctypes.data, len(buffer)))
    if n < 0:
        return None
    tags, vals, sids = {}, {}, {}
    for i, name in enumerate(FIELDS):
        tags[name] = _view(lib.ks_tag(handle, i), n, np.int8)
        vals[name] = _view(lib.ks_val(handle, i), n, np.int64)
        sids[name] = _view(lib.ks_sid(handle, i), n, np.int32)
    count = ctypes.c_int64()
    table = _view(lib.ks_strings(handle, ctypes.byref(count)), 3 * count.value, np.int64)
    table = table.reshape(-1, 3)
    view = memoryview(piece).cast("B")
    raw = [bytes(view[o : o + k]) for o, k in table[:, :2].tolist()]
    return Scanned(
        piece=view, n=n, tags=tags, vals=vals, sids=sids,
        grid=_view(lib.ks_list3(handle, 0), 3 * n, np.int64).reshape(n, 3),
        block=_view(lib.ks_list3(handle, 1), 3 * n, np.int64).reshape(n, 3),
        span=_view(lib.ks_span(handle), 2 * n, np.int64).reshape(n, 2),
        raw=raw, escaped=(table[:, 2] & _HAS_ESCAPE).astype(bool),
    )
