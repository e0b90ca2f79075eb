"""Arrow IPC cache of parsed traces, keyed by a hash of the file's content.

Layout: ``<cache>/traces/<key>/{meta.json,strings.arrow,<table>.arrow}`` written to a
temporary directory and renamed into place, so a crash never leaves half an entry.
Hashing a 1 GB file costs ~0.5 s, so ``<cache>/stat/<hash of path+size+mtime>`` remembers
the content hash of files seen before: re-opening an unchanged file skips the hashing.

The cache is never trusted blindly (docs/security.md, "The cache"): every entry holds
``sums.json``, the sha256 of each of its files, written last at store time and checked on
every load (one pass over ~120 MB of Arrow per GB of trace, ~0.1 s); the files are read, not
memory-mapped, so the bytes checked are the bytes used (and a file cut under a map cannot
raise SIGBUS). A mismatch, a missing file or anything that does not decode drops the entry
with a one-line notice on stderr, and the trace is read again. Names found in the ``stat/``
index must be content hashes (32 hex digits) and every entry must resolve to a directory
inside ``<cache>/traces``: nothing read from the cache is ever used as a path outside it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import numpy as np

from stepscope.errors import one_line
from stepscope.io.source import RawSource
from stepscope.model.trace import Trace, TraceMeta

if TYPE_CHECKING:
    import pyarrow as pa

# pyarrow is imported where the cache is read or written (~30 ms): `report --no-cache`
# never touches it.

CACHE_FORMAT = "3"  # 2: tree content hash; 3: sums.json (checksums of the files)


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "stepscope"


HASH_PIECE = 64 << 20
_HASH_READ = 8 << 20


def _digest_range(read: Callable[[int, int], bytes | memoryview], start: int, end: int) -> bytes:
    h = hashlib.sha256()
    for pos in range(start, end, _HASH_READ):
        h.update(read(pos, min(_HASH_READ, end - pos)))
    return h.digest()


def content_hash(data: bytes | memoryview | Callable[[], bytes | memoryview],
                 local_file: str | None = None) -> str:
    """Tree hash: sha256 of the sha256 of each 64 MB piece (pieces hashed on 2 threads).

    sha256 (SHA-NI) is the fastest hash in hashlib here (~0.6 s/GB on one core; blake2b is
    ~2x slower); hashlib releases the GIL, so two threads halve the time. A local file is
    hashed through pread, never held whole: ``data`` may be a function giving the bytes,
    called only when the file cannot be read in full (it changed: the bytes used are hashed).
    """
    fd = -1
    size = -1
    if local_file is not None:
        try:
            fd = os.open(local_file, os.O_RDONLY)
            size = os.fstat(fd).st_size
        except OSError:
            fd = -1
    views: list[memoryview] = []

    def view() -> memoryview:
        if not views:
            views.append(memoryview(data() if callable(data) else data))
        return views[0]

    try:
        if fd < 0 or (not callable(data) and memoryview(data).nbytes != size):
            size = view().nbytes
        read: Callable[[int, int], bytes | memoryview]
        if fd >= 0:
            def read(off: int, n: int) -> bytes | memoryview:
                blob = os.pread(fd, n, off)
                if len(blob) != n:
                    raise _ShortRead
                return blob
        else:
            def read(off: int, n: int) -> bytes | memoryview:
                return view()[off : off + n]
        try:
            digests = _digests(read, size)
        except _ShortRead:  # the file changed under us: hash the bytes that were read
            size = view().nbytes
            digests = _digests(lambda off, n: view()[off : off + n], size)
    finally:
        if fd >= 0:
            os.close(fd)
    tree = hashlib.sha256(b"".join(digests) + size.to_bytes(8, "little"))
    return tree.hexdigest()[:32]


class _ShortRead(Exception):
    """A pread came back short: the file is not the size it had."""


def _digests(read: Callable[[int, int], bytes | memoryview], size: int) -> list[bytes]:
    ranges = [(i, min(size, i + HASH_PIECE)) for i in range(0, size, HASH_PIECE)] or [(0, 0)]
    if len(ranges) > 1:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return list(pool.map(lambda r: _digest_range(read, *r), ranges))
    return [_digest_range(read, *ranges[0])]


def _read_index(stat_file: Path) -> str:
    """The first bytes of a stat/ index file (no links followed, never a whole big file)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(stat_file, flags)
    try:
        return os.read(fd, 64).decode("ascii").strip()
    finally:
        os.close(fd)


def key_for(source: RawSource, reader_version: str) -> str:
    """Cache key: reader version + content hash (looked up by stat key when possible)."""
    stat_file = None
    if source.stat_key is not None:
        stat_name = hashlib.sha256(source.stat_key.encode()).hexdigest()[:32]
        stat_file = cache_dir() / "stat" / stat_name
        try:
            digest = _read_index(stat_file)
            if _DIGEST.fullmatch(digest):  # anything else is not ours: hash the content again
                return f"{reader_version}-{CACHE_FORMAT}-{digest}"
        except (OSError, UnicodeDecodeError):
            pass
    # a local file is hashed by byte ranges: its bytes are not read whole for the key
    digest = content_hash(lambda: source.data, source.local_file)
    # a file that changed while it was read (or a cut gzip) is not remembered by its stat
    if stat_file is not None and not source.notes:
        try:
            stat_file.parent.mkdir(parents=True, exist_ok=True)
            if stat_file.is_symlink():  # never write through a link planted in the index
                stat_file.unlink()
            stat_file.write_text(digest)
        except OSError:
            pass  # a read-only cache only costs speed
    return f"{reader_version}-{CACHE_FORMAT}-{digest}"


_DIGEST = re.compile(r"[0-9a-f]{32}")
_KEY = re.compile(r"[A-Za-z0-9_.-]+-[0-9a-f]{32}")
SUMS = "sums.json"


def _entry(key: str) -> Path:
    if not _KEY.fullmatch(key) or ".." in key:
        raise ValueError(f"not a cache key: {key!r}")
    return cache_dir() / "traces" / key


def _confined(entry: Path) -> bool:
    """Whether ``entry`` is a real directory (not a link) right inside ``<cache>/traces``."""
    try:
        return (not entry.is_symlink() and entry.is_dir()
                and entry.resolve().parent == (cache_dir() / "traces").resolve())
    except OSError:
        return False


def _drop(entry: Path, path: str, why: str) -> None:
    """Remove a bad entry (a link itself, never what it points to) and say so."""
    notice = f"{path}: its cached copy is damaged ({why}); reading the trace again"
    print(f"stepscope: {one_line(notice)}", file=sys.stderr)
    try:
        if entry.is_symlink() or not entry.is_dir():
            entry.unlink()
        elif _confined(entry):
            shutil.rmtree(entry, ignore_errors=True)
    except OSError:
        pass


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_HASH_READ):
            h.update(chunk)
    return h.hexdigest()


def store(key: str, trace: Trace) -> bool:
    """Write ``trace`` under ``key``; returns False (silently) when the cache is unwritable."""
    import pyarrow as pa

    try:
        final = _entry(key)
        final.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=final.parent))
    except (OSError, ValueError):
        return False
    try:
        (tmp / "meta.json").write_bytes(msgspec.json.encode(trace.meta))
        _write(tmp / "strings.arrow", pa.table({"s": pa.array(list(trace.strings), pa.string())}))
        for name in Trace.TABLES:
            table = getattr(trace, name)
            _write(tmp / f"{name}.arrow", pa.table(table.columns()))
        sums = {name: _file_digest(tmp / name) for name in _files()}
        (tmp / SUMS).write_bytes(msgspec.json.encode(sums))  # last: it vouches for the rest
        try:
            os.rename(tmp, final)
        except OSError:  # another process stored it first
            shutil.rmtree(tmp, ignore_errors=True)
        return True
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return False


def _write(path: Path, table: pa.Table) -> None:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    with pa.OSFile(str(path), "wb") as sink, ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)


def _files() -> list[str]:
    return ["meta.json", "strings.arrow", *(f"{name}.arrow" for name in Trace.TABLES)]


class _Damaged(Exception):
    """A cache entry whose bytes are not those written (the message says which file)."""


def _checked(entry: Path, name: str, sums: dict[str, str]) -> bytes:
    """The bytes of ``entry/name``, raising _Damaged unless they match their checksum."""
    data = (entry / name).read_bytes()
    if hashlib.sha256(data).hexdigest() != sums.get(name):
        raise _Damaged(f"{name} fails its checksum")
    return data


def _read(data: bytes) -> pa.Table:
    import pyarrow as pa
    import pyarrow.ipc as ipc

    return ipc.open_file(pa.BufferReader(data)).read_all()


def load(key: str, path: str) -> Trace | None:
    """The cached trace for ``key`` (with ``path`` as its source), or None."""
    import pyarrow as pa

    try:
        entry = _entry(key)
    except ValueError:
        return None
    if not entry.exists() and not entry.is_symlink():
        return None
    try:
        if not _confined(entry):
            raise _Damaged("not a directory inside the cache")
        try:
            sums = msgspec.json.decode((entry / SUMS).read_bytes(), type=dict[str, str])
        except FileNotFoundError:
            raise _Damaged(f"no {SUMS}") from None
        meta = msgspec.json.decode(_checked(entry, "meta.json", sums), type=TraceMeta)
        strings = tuple(_read(_checked(entry, "strings.arrow", sums)).column("s").to_pylist())
        tables: dict[str, Any] = {}
        for name, cls in Trace.TABLES.items():
            t = _read(_checked(entry, f"{name}.arrow", sums))
            if len(t):
                cols = {c: t.column(c).to_numpy() for c in t.column_names}
            else:  # empty Arrow columns come back without their numpy dtype
                cols = {c: np.empty(0, dtype=cls.DTYPES[c]) for c in cls.DTYPES}
            tables[name] = cls.from_columns(cols)
        trace = Trace(meta=dataclasses.replace(meta, path=path), strings=strings, **tables)
    except _Damaged as exc:
        _drop(entry, path, str(exc))
        return None
    except (OSError, pa.ArrowException, msgspec.MsgspecError, KeyError, ValueError,
            TypeError) as exc:
        _drop(entry, path, f"{type(exc).__name__}: {exc}")
        return None
    return trace
