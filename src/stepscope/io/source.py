"""Read the bytes of a trace from a local path or any fsspec URL.

Local uncompressed files are read into memory when their bytes are first needed (a cache hit
found by the stat key never pays for it; sniffing reads only the head). They used to be
memory-mapped, but a mapped file that shrinks while it is read (a profiler still writing,
``cp`` over it) kills the process with SIGBUS: a read just comes back short, and the reader
keeps the complete events before the cut. Gzip is recognised by its magic bytes, never by
the file name, and inflated as a stream with isal when it is installed (about 1.45x faster
than zlib), up to a ceiling (:func:`max_inflated_bytes`): a small file that inflates to more
than the machine can analyse is refused in one line instead of exhausting memory.
"""

from __future__ import annotations

import gzip
import io
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import ModuleType
from typing import IO, Any

from stepscope.errors import TraceFormatError, TraceSourceError, UsageError, redact_urls

gzip_impl: ModuleType = gzip
_ISAL_ERROR: type[Exception] = zlib.error
try:  # isal is an optional accelerator with the same API as the stdlib module
    import isal.igzip
    import isal.isal_zlib

    gzip_impl = isal.igzip
    _ISAL_ERROR = getattr(isal.isal_zlib, "error")  # noqa: B009 - IsalError, not a zlib.error
except ImportError:  # pragma: no cover - exercised only where isal is missing
    pass

GZIP_MAGIC = b"\x1f\x8b"

MAX_INFLATED_ENV = "STEPSCOPE_MAX_INFLATED_BYTES"
# Peak memory of an analysis per byte of inflated trace, rounded up from the measured 1.46
# (`stepscope report --no-cache` of a 1.0 GB trace .json.gz peaks at 1.49 GB: the inflated
# bytes plus ~0.5 byte of columns, strings and decoder buffers per byte; docs/security.md).
# A trace larger than physical memory divided by this cannot be analysed on this machine, so
# inflating further only ends in MemoryError or swapping.
MEMORY_PER_INFLATED_BYTE = 2
_DEFAULT_CEILING = 8 << 30  # when physical memory cannot be queried (not POSIX)
# Inflated bytes per read: the buffer passes the ceiling by 16 MB at most before the refusal.
_INFLATE_OUT = 16 << 20
# Compressed bytes per step of the salvage of a cut stream: deflate expands at most ~1032x,
# so one step passes the ceiling by 64 MB at most.
_INFLATE_IN = 1 << 16


def _size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):,.1f} {unit}"
    return f"{n:,} bytes"


def parse_size(text: str) -> int:
    """``"4G"``, ``"512M"``, ``"100k"`` or a plain number of bytes; ValueError otherwise."""
    t = text.strip().upper().removesuffix("B").removesuffix("I")
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}.get(t[-1:], 1)
    value = float(t[:-1] if scale > 1 else t)
    if not value >= 0 or value != value:
        raise ValueError(text)
    return int(value * scale)


def max_inflated_bytes() -> int:
    """The most bytes a compressed input may inflate to.

    ``STEPSCOPE_MAX_INFLATED_BYTES`` (bytes, or with a K/M/G/T suffix) when set; otherwise
    physical memory / :data:`MEMORY_PER_INFLATED_BYTE`: what the analysis can hold.
    """
    env = os.environ.get(MAX_INFLATED_ENV, "").strip()
    if env:
        try:
            return parse_size(env)
        except (ValueError, IndexError):
            raise UsageError(f"{MAX_INFLATED_ENV}={env!r}: not a size (e.g. 8G, 500M, "
                             "or a number of bytes)") from None
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return _DEFAULT_CEILING
    return max(1 << 30, phys // MEMORY_PER_INFLATED_BYTE)


def _too_large(path: str, limit: int) -> TraceSourceError:
    return TraceSourceError(
        f"{path}: inflates to more than {_size_text(limit)}, the most this machine can "
        f"analyse (a gzip bomb, or a trace too large for its memory); to go on anyway, set "
        f"{MAX_INFLATED_ENV} (e.g. {MAX_INFLATED_ENV}=64G)")


@dataclass(frozen=True)
class RawSource:
    """The decoded bytes of one trace plus what identifies the file cheaply."""

    path: str
    compressed: bool
    stat_key: str | None  # path+size+mtime (or ETag): None when unknown, then only content hashes
    local_file: str | None  # set for uncompressed local files, so workers can pread them
    load: Callable[[], bytes | memoryview] = field(repr=False, compare=False)
    # problems met while reading that did not stop it (a truncated gzip stream), for warnings
    notes: list[str] = field(default_factory=list, repr=False, compare=False)

    @cached_property
    def data(self) -> bytes | memoryview:
        """The (inflated) bytes, read on first use; raises StepscopeError."""
        return self.load()

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes, without reading all of an uncompressed local file."""
        if self.local_file is not None and "data" not in self.__dict__:
            try:
                with open(self.local_file, "rb") as fh:
                    return fh.read(n)
            except OSError:
                pass  # the full read raises the one-line error
        return bytes(self.data[:n])


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def local_path(path: str) -> str:
    """A local path or file:// URL as an OS path (~ expanded)."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    return os.path.expanduser(path)


def _inflate_prefix(path: str, fh: IO[bytes], limit: int) -> bytes:
    """What a cut gzip stream inflates to before the cut (zlib streams it), up to ``limit``."""
    fh.seek(0)
    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    out = bytearray()
    try:
        while chunk := fh.read(_INFLATE_IN):
            out += d.decompress(chunk)
            if len(out) > limit:
                raise _too_large(path, limit)
            if d.eof:
                break
    except zlib.error:
        pass
    return bytes(out)


def _inflate(path: str, fh: IO[bytes], notes: list[str] | None = None) -> bytes | memoryview:
    """The inflated bytes of the gzip stream ``fh``, refused beyond :func:`max_inflated_bytes`.

    Inflated piece by piece into one growing buffer (no second copy of the whole), so memory
    follows the output and stops at the ceiling, and whitespace or a CRC error at the end of
    a huge member costs no more than the ceiling.
    """
    limit = max_inflated_bytes()
    out = bytearray()
    try:
        with gzip_impl.GzipFile(fileobj=fh, mode="rb") as gz:
            while piece := gz.read(_INFLATE_OUT):
                out += piece
                if len(out) > limit:
                    raise _too_large(path, limit)
        return memoryview(out)
    except (EOFError, zlib.error, OSError, ValueError, _ISAL_ERROR) as exc:
        # isal raises its own IsalError (not a zlib.error) for an invalid deflate block
        del out
        msg = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError) or "end-of-stream" in msg or "truncated" in msg.lower():
            # salvaged like a cut .json: the JSON reader keeps the complete events
            prefix = _inflate_prefix(path, fh, limit)
            if prefix.strip() and notes is not None:
                notes.append(
                    "gzip data is truncated (incomplete download or copy?); "
                    f"read the {len(prefix):,} bytes before the cut"
                )
                return prefix
            raise TraceSourceError(
                f"{path}: gzip data is truncated (incomplete download or copy?)"
            ) from None
        raise TraceSourceError(f"{path}: gzip data is corrupt ({msg})") from None


def _read_local(path: str) -> RawSource:
    local = local_path(path)
    try:
        st = os.stat(local)
    except FileNotFoundError:
        raise TraceSourceError(f"{path}: no such file") from None
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot read ({exc.strerror})") from None
    if os.path.isdir(local):
        raise TraceSourceError(f"{path}: is a directory; give a trace file")
    if st.st_size == 0:
        raise TraceFormatError(f"{path}: file is empty")
    stat_key = f"{os.path.realpath(local)}|{st.st_size}|{st.st_mtime_ns}"
    try:
        with open(local, "rb") as fh:
            magic = fh.read(2)
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    notes: list[str] = []
    if magic == GZIP_MAGIC:
        return RawSource(path, True, stat_key, None, lambda: _read_gzip(path, local, notes),
                         notes)
    return RawSource(path, False, stat_key, local,
                     lambda: _read_plain(path, local, st.st_size, notes), notes)


def _read_plain(path: str, local: str, size: int, notes: list[str]) -> bytes:
    """The whole file, read (not mapped: a mapped file that shrinks raises SIGBUS)."""
    try:
        with open(local, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(data) != size:
        notes.append(f"the file changed while it was read ({size:,} bytes, then "
                     f"{len(data):,}; still being written?)")
    if not data:
        raise TraceFormatError(f"{path}: file is empty")
    return data


def _read_gzip(path: str, local: str, notes: list[str] | None = None) -> bytes | memoryview:
    try:
        with open(local, "rb") as fh:
            return _inflate(path, fh, notes)
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot read ({exc.strerror or exc})") from None


def _read_url(path: str, storage_options: dict[str, Any] | None) -> RawSource:
    import fsspec

    try:
        fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
        info = fs.info(fs_path)
        with fs.open(fs_path, "rb") as fh:
            blob = fh.read()
    except ImportError as exc:
        from stepscope.io.cloud_errors import scheme_missing

        raise TraceSourceError(scheme_missing(path, exc)) from None
    except FileNotFoundError as exc:
        from stepscope.io.cloud_errors import not_found

        raise TraceSourceError(not_found(path, exc)) from None
    except Exception as exc:  # network and credential errors come in many types
        from stepscope.io.cloud_errors import storage_error

        raise TraceSourceError(storage_error(path, exc)) from None
    path = redact_urls(path)  # from here on the path is only shown (reports, messages)
    if not blob:
        raise TraceFormatError(f"{path}: file is empty")
    version = info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified")
    stat_key = f"{path}|{info.get('size')}|{version}" if version is not None else None
    if blob[:2] == GZIP_MAGIC:
        url_notes: list[str] = []
        return RawSource(path, True, stat_key, None,
                         lambda: _inflate(path, io.BytesIO(blob), url_notes), url_notes)
    return RawSource(path, False, stat_key, None, lambda: blob)


def head_of(fh: IO[bytes], n: int) -> bytes:
    """The first ``n`` bytes of the seekable stream ``fh``, inflated when it is a gzip
    (raises what reading or inflating raises)."""
    head = fh.read(n)
    if head[:2] != GZIP_MAGIC:
        return bytes(head)
    fh.seek(0)
    with gzip.GzipFile(fileobj=fh) as gz:
        return gz.read(n)


def read_url_head(path: str, n: int, storage_options: dict[str, Any] | None = None) -> bytes:
    """The first ``n`` (inflated) bytes of a URL without downloading the whole object.

    For sniffing what a remote file holds before reading it for real (which would otherwise
    fetch it twice). Anything unusual (an error, a gzip stream that does not inflate) goes
    through ``read_source``, so the answer and the error messages are the same as its.
    """
    import fsspec

    try:
        fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
        with fs.open(fs_path, "rb") as fh:
            return head_of(fh, n)
    except Exception:  # read_source raises its one-line error, or salvages a cut gzip
        return bytes(read_source(path, storage_options).data[:n])


def sqlite_uri(local: str) -> str:
    """A ``file:`` URI that opens the SQLite file ``local`` read-only and immutable.

    The path is percent-encoded (``Path.as_uri``): pasted in raw, a ``#`` starts the URI's
    fragment and a ``?`` its query, so ``a#b.sqlite`` opened ``a`` in the default
    read-write-create mode (an empty file appeared next to the input) and ``%20`` was read
    as a space. ``immutable=1`` tells SQLite the file cannot change: it takes no locks and
    writes no journal, ``-wal`` or ``-shm`` file next to the input.
    """
    return Path(os.path.abspath(local)).as_uri() + "?mode=ro&immutable=1"


def read_source(path: str, storage_options: dict[str, Any] | None = None) -> RawSource:
    """Return the (inflated) bytes of ``path``; raises StepscopeError with a one-line message."""
    if is_url(path):
        return _read_url(path, storage_options)
    return _read_local(path)
