"""Reader for PyTorch profiler / Kineto Chrome-trace JSON, of every PyTorch era.

Pipeline: find the event array by byte ranges (its ``[`` by pattern in the head, its
``]`` by bracket depth counted back from the end of the file, so ``traceEvents`` may come
first, last or between other keys) and decode the rest of the document on its own; split
the array into ~4 MB chunks at event boundaries, decode each chunk into typed Structs and
immediately turn it into numpy columns (so peak memory is one chunk of Python objects, not
the whole trace), merge the chunks' string tables, sort. Large files are decoded by a pool
of forked workers, one chunk at a time. Anything of another shape (a bare array, a cut
file, a layout without Kineto's event boundaries) is decoded whole, carefully.
"""

from __future__ import annotations

import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from multiprocessing import get_context
from typing import Any

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.errors import TraceFormatError
from stepscope.formats.kineto.columns import (
    F_COLL,
    F_DEVICE,
    F_GPU_ANN,
    F_HOST,
    F_MEMORY,
    F_RUNTIME,
    F_SYNC,
    STRING_COLUMNS,
    ChunkResult,
    Columns,
    Strings,
    build_chunk,
)
from stepscope.formats.kineto.comms import process_groups
from stepscope.formats.kineto.devices import devices_from_events, read_device_props
from stepscope.formats.kineto.lenient import repair_event
from stepscope.formats.kineto.scan import release as release_scanner
from stepscope.formats.kineto.scanned import scanned_chunk
from stepscope.formats.kineto.schema import DistributedInfo, Document, Event
from stepscope.io.source import RawSource
from stepscope.model.trace import (
    Collectives,
    DeviceOps,
    DeviceProperties,
    GpuAnnotations,
    HostOps,
    MemoryRecords,
    Runtimes,
    Syncs,
    Trace,
    TraceMeta,
)

# 2: input types, strides, concrete inputs; 3: repaired odd fields; 4: collectives table;
# 5: baseTimeNanoseconds kept (TraceMeta.base_time_ns); 6: TraceMeta.incomplete;
# 7: schemaVersion of any type tolerated, bad UTF-8 in deviceProperties replaced;
# 8: all-to-all split sizes and process-group ranks on the collectives table
# 9: collectives' "Seq", distributedInfo's process groups
READER_VERSION = "kineto-9"
# 16 MB chunks. The native scanner (scan.c) pays per chunk the fixed cost of turning its
# columns into tables (~130 array views and ~50 numpy passes, ~3 ms): 16 MB measured 13 %
# less CPU and 15 % less wall time than 4 MB reading 1 GB on two workers (32 MB gained
# nothing more, and splits small files coarsely). The msgspec path would rather have 4 MB
# (its ~12k events' Structs stay in cache while the column passes walk them: measured 27 %
# less CPU per byte), but both paths must cut a trace the same way: a chunk's strings get
# their ids chunk by chunk, so another cut gives another string table, and a trace must
# read the same with and without the scanner (tests/integration/test_native_scanner_real).
CHUNK_BYTES = 16 << 20
PARALLEL_MIN_BYTES = 48 << 20
# Kineto writes "  },\n  {" between events; JSON strings cannot hold raw newlines, so this
# byte pattern can only be a boundary between two elements of the event array.
BOUNDARY = b"},\n  {"

_EVENTS = msgspec.json.Decoder(list[Event])
_EVENT = msgspec.json.Decoder(Event)
_DOCUMENT = msgspec.json.Decoder(Document)
_GENERIC = msgspec.json.Decoder()

ProgressFn = Callable[[int, int], None]

_SNIFF_BYTES = 4096


UTF8_BOM = b"\xef\xbb\xbf"


def _schema_version(raw: msgspec.Raw) -> tuple[int | None, bool]:
    """(``schemaVersion`` when it is an integer (Kineto writes 1), whether it is odd).

    Only reported, so never a reason to reject a trace: a string or null (some producers)
    is quietly not a version, anything else (a float, an object) is ignored with a warning.
    """
    if not len(raw):
        return None, False
    try:
        value = msgspec.json.decode(raw)
    except (msgspec.MsgspecError, UnicodeDecodeError):
        return None, True
    if isinstance(value, int) and not isinstance(value, bool):
        return value, False
    return None, not (value is None or isinstance(value, str))


def _opening(data: Body) -> bytes:
    """The first non-blank byte of the file's head after a UTF-8 BOM (b"" when blank)."""
    return bytes(data[:_SNIFF_BYTES]).removeprefix(UTF8_BOM).lstrip()[:1]


_WINDOW = 1 << 20


class _FileChanged(Exception):
    """A byte range of the file came back short: it shrank while it was read."""


class FileView:
    """Bytes ``[base, base + nbytes)`` of a local file, read by byte ranges (pread) on demand.

    The reader needs the head, the tail, the event boundaries near each chunk edge and each
    chunk once: holding the whole file in the parent cost one byte of RSS per byte of trace
    (a 1 GB trace peaked at 1.48 GB). Never a memory map: a file that shrinks under a map
    raises SIGBUS (docs/security.md); a short read raises _FileChanged instead, and the
    reader then reads the file whole and keeps what is complete.
    """

    def __init__(self, path: str, base: int, nbytes: int) -> None:
        self.path, self.base, self.nbytes = path, base, nbytes

    def __getitem__(self, key: slice) -> bytes:
        lo, hi, _ = key.indices(self.nbytes)
        if hi <= lo:
            return b""
        with open(self.path, "rb", buffering=0) as fh:
            blob = os.pread(fh.fileno(), hi - lo, self.base + lo)
        if len(blob) != hi - lo:
            raise _FileChanged
        return blob

    def sub(self, lo: int, hi: int) -> FileView:
        return FileView(self.path, self.base + lo, max(0, hi - lo))


Body = memoryview | FileView


def _sub(data: Body, lo: int, hi: int) -> Body:
    return data.sub(lo, hi) if isinstance(data, FileView) else data[lo:hi]


def _find(body: Body, pattern: bytes, pos: int) -> int:
    """``body.find(pattern, pos)`` searching windows of 4 KB growing to 1 MB: the body is
    never copied whole, and a boundary a few hundred bytes on (Kineto's events are small)
    costs a 4 KB read, not 1 MB (reading 1 MB per chunk edge was 4x the chunks' own reads)."""
    size = body.nbytes
    window = 4096
    while pos < size:
        i = bytes(body[pos : min(size, pos + window + len(pattern))]).find(pattern)
        if i >= 0:
            return pos + i
        pos += window
        window = min(2 * window, _WINDOW)
    return -1


def _chunk_bounds(body: Body) -> list[tuple[int, int]]:
    """Split the inside of the event array into [start, end) ranges at event boundaries."""
    size = body.nbytes
    bounds = []
    start = 0
    while start < size:
        hit = _find(body, BOUNDARY, start + CHUNK_BYTES) if size - start > CHUNK_BYTES else -1
        end = hit + 2 if hit >= 0 else size  # cut after "},"
        bounds.append((start, end))
        start = end
    return bounds


def _decode_events(piece: bytes | memoryview) -> tuple[list[Event], Counter[str], Counter[str]]:
    """Typed decode of one '[...]' piece; per-event repair when field types are off.

    Returns (events, skipped reasons, field repairs).
    """
    skipped: Counter[str] = Counter()
    repairs: Counter[str] = Counter()
    try:
        try:
            return _EVENTS.decode(piece), skipped, repairs
        except msgspec.ValidationError:
            items = _GENERIC.decode(piece)  # the slow path: repair event by event
    except UnicodeDecodeError:
        # strings with bytes that are not UTF-8 (met by the typed decode or, after a type
        # error earlier in the piece, by the generic one): keep the events, with U+FFFD
        piece = bytes(piece).decode("utf-8", "replace").encode()
        events, skipped, repairs = _decode_events(piece)
        skipped["invalid UTF-8 in names (replaced by U+FFFD)"] += 1
        return events, skipped, repairs
    events = []
    for item in items:
        event = repair_event(item, repairs)
        if event is None:
            skipped["malformed event (not an object, or unrepairable fields)"] += 1
        else:
            events.append(event)
    return events, skipped, repairs


def _decode_chunk(piece: bytes | memoryview) -> ChunkResult:
    fast = scanned_chunk(piece)  # the native scanner, when built and sure of the chunk
    if fast is not None:
        return fast
    events, skipped, repairs = _decode_events(piece)
    try:
        result = build_chunk(events)
    except (OverflowError, ValueError):
        # a value survived typed decoding but not numpy (e.g. an int beyond 64 bits)
        sane = [e for e in events if _event_is_sane(e)]
        skipped["malformed event (out-of-range values)"] += len(events) - len(sane)
        result = build_chunk(sane)
    result.skipped.update(skipped)
    result.repairs.update(repairs)
    return result


def _event_is_sane(e: Event) -> bool:
    try:
        msgspec.json.encode(e)
        build_chunk([e])
    except (OverflowError, ValueError, TypeError):
        return False
    return True


FileBody = tuple[str, int]  # (uncompressed local file, offset of the event-array body in it)

_BUFFER: list[bytearray] = []  # the chunk buffer of this process, reused from chunk to chunk


def _pread_into(view: memoryview, file_body: FileBody, offset: int) -> int:
    path, base = file_body
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return -1
    try:
        return os.preadv(fd, [view], base + offset)
    except OSError:
        return -1
    finally:
        os.close(fd)


def _piece(body: Body, start: int, end: int, file_body: FileBody | None = None) -> memoryview:
    """'[' + body[start:end] (trailing comma blanked) + ']', as one decodable JSON array.

    Written into a buffer reused from chunk to chunk: no page faults for fresh 4 MB
    allocations and no copies to add the brackets. Safe to reuse: the decoded events (and
    any msgspec.Raw pointing into the buffer) are gone once the chunk's columns exist.
    For an uncompressed local file the bytes are read with pread rather than through the
    memory map: touching the map would leave every decoded page resident in this process.
    """
    n = end - start
    if not _BUFFER or len(_BUFFER[0]) < n + 2:
        _BUFFER[:] = [bytearray(n + 2 + (1 << 20))]
    buf = _BUFFER[0]
    inner = memoryview(buf)[1 : n + 1]
    if file_body is None or _pread_into(inner, file_body, start) != n:
        inner[:] = body[start:end]  # a FileView raises _FileChanged when it comes back short
    buf[0] = 0x5B  # [
    i = n  # blank the trailing whitespace, scanning back 1 MB at a time (rstrip runs in C)
    while i > 0:
        lo = max(1, i + 1 - _WINDOW)
        kept = len(bytes(buf[lo : i + 1]).rstrip())  # ASCII blanks: space, \t\n\r\v\f
        buf[lo + kept : i + 1] = b" " * (i + 1 - lo - kept)
        i = lo + kept - 1
        if kept:
            break
    if buf[i] == 0x2C:  # ,
        buf[i] = 0x20
    buf[n + 1] = 0x5D  # ]
    return memoryview(buf)[: n + 2]


# Forked workers see the body through this module global (copy-on-write), with the file
# it can be pread from when there is one.
_SHARED: tuple[Body, FileBody | None] | None = None


def _worker(bounds: tuple[int, int]) -> ChunkResult:
    assert _SHARED is not None
    body, file_body = _SHARED
    return _decode_chunk(_piece(body, *bounds, file_body))


def _decode_all_chunks(
    body: Body, workers: int, progress: ProgressFn | None, file_body: FileBody | None,
) -> list[ChunkResult]:
    global _SHARED
    bounds = _chunk_bounds(body)
    if progress:
        progress(0, body.nbytes)
    results: list[ChunkResult] = []
    try:
        if workers > 1 and len(bounds) > 1 and body.nbytes >= PARALLEL_MIN_BYTES:
            _SHARED = (body, file_body)
            with ProcessPoolExecutor(max_workers=workers, mp_context=get_context("fork")) as pool:
                for (_, end), res in zip(bounds, pool.map(_worker, bounds), strict=True):
                    results.append(res)
                    if progress:
                        progress(end, body.nbytes)
            return results
        for start, end in bounds:
            results.append(_decode_chunk(_piece(body, start, end, file_body)))
            if progress:
                progress(end, body.nbytes)
        return results
    finally:
        _SHARED = None
        _BUFFER.clear()  # the parent keeps no chunk buffer between reads
        release_scanner()


def _decode_body(body: Body, workers: int, progress: ProgressFn | None,
                 file_body: FileBody | None = None) -> list[ChunkResult]:
    try:
        return _decode_all_chunks(body, workers, progress, file_body)
    except msgspec.DecodeError:
        # The boundary heuristic cut inside an event (a non-Kineto layout): decode it whole.
        try:
            return [_decode_chunk(_piece(body, 0, body.nbytes))]
        finally:
            _BUFFER.clear()
            release_scanner()


_OPEN_EVENTS = re.compile(rb'"traceEvents"\s*:\s*\[')
_FAST_HEAD = 4 << 20
_FAST_TAIL = 1 << 20
_SALVAGE_HEAD = 64 << 20


def _events_start(head: bytes) -> int:
    """Offset just past the '[' that opens traceEvents in ``head``, or -1."""
    m = _OPEN_EVENTS.search(head)
    return m.end() if m else -1


def _base_time(raw: msgspec.Raw) -> int | None:
    """``baseTimeNanoseconds`` as an int; None when absent or not a positive number."""
    if not len(raw):
        return None
    try:
        value = msgspec.json.decode(raw)
        ns = int(value) if isinstance(value, int | float | str) and \
            not isinstance(value, bool) else None
    except (msgspec.MsgspecError, ValueError, OverflowError):
        return None
    return ns if ns is not None and ns > 0 else None


def _closing_bracket(tail: bytes) -> int:
    """Offset in ``tail`` of the bracket that closes the value open at its start, or -1.

    ``tail`` is the end of the document (its last byte closes the top-level object), so
    a byte is inside a string when an odd number of string quotes follow it (a quote
    preceded by an odd run of backslashes is escaped), and the depth of a bracket counted
    from the end is known without reading the file from its start. Closing brackets of
    top-level values have depth 2 (the document's own ``}`` is 1); those of values that
    open and close inside ``tail`` come after their opener (depth 1), so the first
    depth-2 closer is the end of the value open at ``tail``'s start: the event array,
    whatever keys come after it. Vectorised: a few numpy passes over ``tail``.
    """
    a = np.frombuffer(tail, dtype=np.uint8)
    if not len(a):
        return -1
    idx = np.arange(len(a))
    plain = np.maximum.accumulate(np.where(a == 0x5C, -1, idx))  # last non-backslash
    quotes = np.flatnonzero(a == 0x22)
    run = np.where(quotes > 0, quotes - 1 - plain[np.maximum(quotes - 1, 0)], 0)
    delims = quotes[run % 2 == 0]
    brackets = np.flatnonzero((a == 0x5B) | (a == 0x5D) | (a == 0x7B) | (a == 0x7D))
    after = len(delims) - np.searchsorted(delims, brackets, side="right")
    brackets = brackets[after % 2 == 0]  # outside strings
    step = np.where((a[brackets] == 0x5D) | (a[brackets] == 0x7D), 1, -1)
    depth = np.cumsum(step[::-1])[::-1]  # from the end, the bracket itself included
    hit = np.flatnonzero((depth == 2) & (step == 1))
    top = np.flatnonzero((depth == 1) & (step == -1))  # openers of top-level values
    if not len(hit) or a[brackets[hit[0]]] != 0x5D or (len(top) and top[0] < hit[0]):
        return -1  # no value open at the start, or it is not an array
    return int(brackets[hit[0]])


def _fast_split(data: Body) -> tuple[Document, Body, int] | None:
    """Top level and event-array body without scanning the whole file, or None.

    Decoding the whole document just to find ``traceEvents`` costs a full pass over the
    bytes (~1 s per GB) and, for a memory-mapped file, makes all of it resident. Instead
    find the array's opening bracket near the start and its closing bracket near the end
    (``_closing_bracket``: other keys may follow the array, in any order), and decode
    ``head + "]" + tail`` as the document. The body is validated anyway when its chunks
    are decoded; whatever does not fit this shape goes the slow way.
    """
    n = data.nbytes
    head = bytes(data[: min(n, _FAST_HEAD)])
    start = _events_start(head)
    if start < 0:
        return None
    tail_at = max(start, n - _FAST_TAIL)
    tail = bytes(data[tail_at:])
    pos = _closing_bracket(tail)
    if pos < 0:
        return None
    end = tail_at + pos
    before = bytes(data[max(start, end - 64) : end]).rstrip()
    if not before.endswith(b"}") and (before or end - start > 64):
        return None  # the last element is not an event object: not a Kineto trace
    try:
        doc = _DOCUMENT.decode(head[:start] + b"]" + tail[pos + 1 :])
    except (msgspec.MsgspecError, UnicodeDecodeError, RecursionError):
        return None
    return doc, _sub(data, start, end), start


# Rows from which the parent's column work (concatenating chunks, sorting by time) runs on
# two threads: numpy copies and gathers without holding the GIL, and at 1 GB this work
# (~0.35 s) is the read's only serial part after the workers.
_THREADED_ROWS = 1 << 20


def _each(work: Callable[[Any], npt.NDArray[Any]], items: list[Any], rows: int,
          ) -> list[npt.NDArray[Any]]:
    """``work`` on each item: on two threads when the columns are large and a second core
    is there, else in turn (the same values either way)."""
    if rows < _THREADED_ROWS or len(items) < 2 or (os.cpu_count() or 1) < 2:
        return [work(item) for item in items]
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(work, items))


def _merge(results: Sequence[ChunkResult]) -> tuple[list[str], dict[int, Columns]]:
    """Concatenate chunk columns, remapping each chunk's string ids into one table."""
    strings = Strings()
    remaps = [strings.ids(res.strings) for res in results]
    merged: dict[int, Columns] = {}
    for fam, str_cols in STRING_COLUMNS.items():
        names: list[str] = list(dict.fromkeys(col for res in results for col in res.tables[fam]))

        def column(col: str, fam: int = fam, str_cols: Any = str_cols) -> npt.NDArray[Any]:
            parts = []
            for res, remap in zip(results, remaps, strict=True):
                values = res.tables[fam].get(col)
                if values is None:
                    continue
                if col in str_cols and len(values):
                    values = np.where(values >= 0, remap[np.maximum(values, 0)], -1)
                parts.append(values)
            return np.concatenate(parts)

        rows = sum(len(next(iter(res.tables[fam].values()), ())) for res in results)
        merged[fam] = dict(zip(names, _each(column, names, rows), strict=True))
    return strings.as_list(), merged


def _sorted(cols: Columns) -> Columns:
    ts = cols["ts"]
    if len(ts) < 2 or bool(np.all(ts[:-1] <= ts[1:])):
        return cols
    order = np.argsort(ts, kind="stable")
    return dict(zip(cols, _each(lambda v: v[order], list(cols.values()), len(ts)),
                    strict=True))


def _vendor(devices: tuple[DeviceProperties, ...], strings: list[str], has_device_ops: bool,
            categories: Counter[str]) -> str:
    """The device's vendor, from what each backend's Kineto plugin writes: MTIA's and
    Intel XPU's (XPUPTI: ``xpu_runtime``/``xpu_driver`` calls such as
    ``urEnqueueKernelLaunch``) own categories, AMD by device name or ``hip*`` calls, an
    out-of-tree PrivateUse1 backend ("unknown": no vendor's advice applies), else NVIDIA
    (CUPTI) when there is a device at all."""
    if categories.get("mtia_ccp_events") or categories.get("mtia_runtime"):
        return "mtia"
    names = " ".join(d.name for d in devices).lower()
    if categories.get("xpu_runtime") or categories.get("xpu_driver") or "intel" in names:
        return "intel"
    if (categories.get("privateuse1_runtime") or categories.get("privateuse1_driver")) and not (
            categories.get("cuda_runtime") or categories.get("hip_runtime")):
        return "unknown"
    if "amd" in names or "radeon" in names or "instinct" in names or any(
        s.startswith("hip") for s in strings[:5000]
    ):
        return "amd"
    if devices or has_device_ops:
        return "nvidia"
    return "cpu"


_TRUNCATED = re.compile(r"truncated|unexpected end", re.IGNORECASE)


# One read at a time per process: the chunk buffer (_BUFFER) and the fork-shared body
# (_SHARED) are module state, and msgspec.Raw fields point into the buffer until the chunk's
# columns are built. The dashboard loads traces on threads; without this, two concurrent
# reads corrupted each other's strings (input types, shapes). Reads still use processes.
_READ_LOCK = threading.Lock()


def read_kineto(source: RawSource, *, workers: int | None = None,
                progress: ProgressFn | None = None) -> Trace:
    """Parse a Kineto Chrome-trace JSON into a columnar Trace (raises TraceFormatError)."""
    try:
        with _READ_LOCK:
            return _read_kineto(source, workers, progress)
    except RecursionError:
        raise TraceFormatError(
            f"{source.path}: JSON nested too deeply to be a trace (hostile or corrupt file)"
        ) from None


def _file_view(source: RawSource) -> FileView | None:
    """The local uncompressed file as a FileView, unless its bytes were read already."""
    if source.local_file is None or source.compressed or "data" in source.__dict__:
        return None
    try:
        size = os.stat(source.local_file).st_size
    except OSError:
        return None
    return FileView(source.local_file, 0, size) if size > 0 else None


def _read_kineto(source: RawSource, workers: int | None, progress: ProgressFn | None) -> Trace:
    n_workers = workers if workers is not None else min(2, os.cpu_count() or 1)
    view = _file_view(source)
    if view is not None:
        try:
            found = _read_fast(source, view, n_workers, progress)
        except _FileChanged:  # it shrank while read: read it whole, keep what is complete
            return _read_whole(source, n_workers, progress, try_fast=True)
        if found is not None:
            return found
    return _read_whole(source, n_workers, progress, try_fast=view is None)


def _read_fast(source: RawSource, data: Body, n_workers: int,
               progress: ProgressFn | None) -> Trace | None:
    """The common shape (one object, ``traceEvents`` near the start), chunk by chunk."""
    bom = len(UTF8_BOM) if bytes(data[: len(UTF8_BOM)]) == UTF8_BOM else 0
    data = _sub(data, bom, data.nbytes)  # some Windows tools write one; JSON parsers refuse it
    fast = _fast_split(data) if _opening(data) == b"{" else None
    if fast is None:
        return None
    doc, body, offset = fast
    file_body = (source.local_file, bom + offset) if source.local_file is not None else None
    try:
        results = _decode_body(body, n_workers, progress, file_body)
    except msgspec.DecodeError:
        return None  # not the shape we guessed: decode it the careful way
    return _trace(source.path, doc, results, list(source.notes), salvaged=bool(source.notes))


def _read_whole(source: RawSource, n_workers: int, progress: ProgressFn | None, *,
                try_fast: bool) -> Trace:
    path = source.path
    data = memoryview(source.data)
    found = _read_fast(source, data, n_workers, progress) if try_fast else None
    if found is not None:
        return found
    bom = len(UTF8_BOM) if bytes(data[: len(UTF8_BOM)]) == UTF8_BOM else 0
    data = data[bom:]
    top, body, warnings = _careful_split(path, data)
    # source notes (a cut gzip stream) and split warnings (a cut JSON) both lose events
    salvaged = bool(source.notes) or bool(warnings)
    warnings = [*source.notes, *warnings]
    try:
        results = _decode_body(body, n_workers, progress)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{path}: not valid JSON ({exc})") from None
    return _trace(path, top, results, warnings, salvaged=salvaged)


def _careful_split(path: str, data: memoryview) -> tuple[Document | None, memoryview, list[str]]:
    """Top level (None for a bare array or a cut file), event-array body and warnings.

    Decodes the whole document; a file cut short keeps the complete events before the cut.
    """
    try:
        if _opening(data) == b"[":
            return None, _array_body(path, data), []
        doc = _DOCUMENT.decode(data)
        if len(doc.traceEvents) == 0:
            head = bytes(data[:4096])
            if b'"schema"' in head and b'"stepscope.' in head:  # our own output, given back
                raise TraceFormatError(f"{path}: a stepscope report or diff, not a trace "
                                       "(compare saved reports with: stepscope diff)")
            raise TraceFormatError(f"{path}: JSON but not a trace (no \"traceEvents\" array)")
        return doc, _array_body(path, memoryview(doc.traceEvents)), []
    except msgspec.ValidationError as exc:
        raise TraceFormatError(f"{path}: JSON but not a Chrome trace ({exc})") from None
    except UnicodeDecodeError as exc:
        raise TraceFormatError(
            f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    except msgspec.DecodeError as exc:
        msg = str(exc)
        start = _events_start(bytes(data[:_SALVAGE_HEAD])) if _TRUNCATED.search(msg) else -1
        if start < 0:
            raise TraceFormatError(f"{path}: not valid JSON ({msg})") from None
        warning = f"file is truncated ({msg}); read the complete events before the cut"
        return None, _salvage_body(data, start), [warning]


def _trace(path: str, doc: Document | None, results: list[ChunkResult],
           warnings: list[str], *, salvaged: bool = False) -> Trace:
    """Merge the chunks and read the top-level metadata into a Trace."""
    strings, tables = _merge(results)
    categories: Counter[str] = Counter()
    skipped: Counter[str] = Counter()
    repairs: Counter[str] = Counter()
    spans: list[tuple[int, int]] = []
    n_events = 0
    for res in results:
        categories.update(res.categories)
        skipped.update(res.skipped)
        repairs.update(res.repairs)
        spans.extend(res.trace_spans)
        n_events += res.events
    if n_events == 0:
        if salvaged and any("truncated" in w for w in warnings):
            raise TraceFormatError(f"{path}: truncated JSON: no complete event could be read "
                                   "before the cut")
        what = "; ".join(f"{n} {r}" for r, n in skipped.items())
        raise TraceFormatError(f"{path}: trace has no events" + (f" ({what})" if what else ""))
    if not any(len(tables[f]["ts"]) for f in (F_HOST, F_RUNTIME, F_DEVICE)):
        why = "; ".join([f"{n:,} {r}" for r, n in skipped.items()]
                        + [f"{n:,} × {r}" for r, n in repairs.items()])
        raise TraceFormatError(
            f"{path}: no usable operator, runtime or device events"
            + (f" ({why})" if why else "")
        )
    if repairs:
        warnings = [*warnings, "fields of the wrong type (kept their events): " + ", ".join(
            f"{n:,} × {r}" for r, n in sorted(repairs.items())
        )]
    rank = world = backend = None
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()
    schema = base_ns = None
    devices: tuple[DeviceProperties, ...] = ()
    if doc is not None:
        devices = read_device_props(doc.deviceProperties, doc.computeProperties)
        schema, odd = _schema_version(doc.schemaVersion)
        if odd:
            warnings = [*warnings, "schemaVersion is neither a number nor a string; ignored"]
        base_ns = _base_time(doc.baseTimeNanoseconds)
        if len(doc.distributedInfo):
            try:
                info = msgspec.json.decode(doc.distributedInfo, type=DistributedInfo)
                rank, world, backend = info.rank, info.world_size, info.backend
                groups = process_groups(info.pg_config)
            except (msgspec.MsgspecError, UnicodeDecodeError):
                warnings = [*warnings, "distributedInfo is malformed; rank unknown"]
    host = HostOps.from_columns(_sorted(tables[F_HOST]))
    device_ops = DeviceOps.from_columns(_sorted(tables[F_DEVICE]))
    devices, device_notes = devices_from_events(devices, device_ops.device)
    meta = TraceMeta(
        path=path, format="kineto", events=n_events, schema_version=schema, devices=devices,
        rank=rank, world_size=world, backend=backend,
        window_start=min(s for s, _ in spans) if spans else None,
        window_end=max(e for _, e in spans) if spans else None,
        vendor=_vendor(devices, strings, len(device_ops) > 0, categories),
        categories=dict(categories), skipped=dict(skipped), warnings=tuple(warnings),
        incomplete=salvaged,
        notes=tuple(device_notes), base_time_ns=base_ns, process_groups=groups,
    )
    return Trace(
        meta=meta, strings=tuple(strings), host=host,
        runtime=Runtimes.from_columns(_sorted(tables[F_RUNTIME])),
        device=device_ops,
        gpu_annotations=GpuAnnotations.from_columns(_sorted(tables[F_GPU_ANN])),
        syncs=Syncs.from_columns(_sorted(tables[F_SYNC])),
        memory=MemoryRecords.from_columns(_sorted(tables[F_MEMORY])),
        collectives=Collectives.from_columns(_sorted(tables[F_COLL])),
    )


def _array_body(path: str, raw: memoryview) -> memoryview:
    """The bytes between the '[' and ']' of an event array."""
    n = raw.nbytes
    lo = bytes(raw[: min(n, 256)]).find(b"[")
    tail_start = max(0, n - 256)
    hi = tail_start + bytes(raw[tail_start:]).rfind(b"]")
    if lo < 0 or hi < lo:
        raise TraceFormatError(f"{path}: \"traceEvents\" is not an array")
    return raw[lo + 1 : hi]


def _salvage_body(data: memoryview, start: int) -> memoryview:
    """Event-array bytes of a cut file, up to the last complete event boundary."""
    pos = data.nbytes
    window = 4 << 20
    while pos > start:
        lo = max(start, pos - window)
        i = bytes(data[lo:pos]).rfind(BOUNDARY)
        if i >= 0:
            return data[start : lo + i + 1]
        pos = lo
    return data[start:start]
