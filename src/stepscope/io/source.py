"""Read the bytes of a trace from a local path or any fsspec URL.

Local uncompressed files are memory-mapped (no copy, pages can be dropped by the OS);
gzip is recognised by its magic bytes, never by the file name, and inflated with isal
when it is installed (about 1.45x faster than zlib). A local gzip file is read and inflated
only when its bytes are first needed: a cache hit found by the stat key never pays for it.
"""

from __future__ import annotations

import gzip
import mmap
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from types import ModuleType
from typing import Any

from stepscope.errors import TraceFormatError, TraceSourceError

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


def is_url(path: str) -> bool:
    return "://" in path and not path.startswith("file://")


def local_path(path: str) -> str:
    """A local path or file:// URL as an OS path (~ expanded)."""
    if path.startswith("file://"):
        path = path[len("file://") :]
    return os.path.expanduser(path)


def _inflate_prefix(blob: bytes | memoryview) -> bytes:
    """What a cut gzip stream inflates to before the cut (zlib streams it)."""
    d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        return d.decompress(blob)
    except zlib.error:
        return b""


def _inflate(path: str, blob: bytes | memoryview, notes: list[str] | None = None) -> bytes:
    try:
        return bytes(gzip_impl.decompress(blob))
    except (EOFError, zlib.error, OSError, ValueError, _ISAL_ERROR) as exc:
        # isal raises its own IsalError (not a zlib.error) for an invalid deflate block
        msg = str(exc) or type(exc).__name__
        if isinstance(exc, EOFError) or "end-of-stream" in msg or "truncated" in msg.lower():
            # salvaged like a cut .json: the JSON reader keeps the complete events
            prefix = _inflate_prefix(blob)
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
            if fh.read(2) == GZIP_MAGIC:
                notes: list[str] = []
                return RawSource(path, True, stat_key, None,
                                 lambda: _read_gzip(path, local, notes), notes)
            view = memoryview(mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ))
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return RawSource(path, False, stat_key, local, lambda: view)


def _read_gzip(path: str, local: str, notes: list[str] | None = None) -> bytes:
    try:
        with open(local, "rb") as fh:
            blob = fh.read()
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return _inflate(path, blob, notes)


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
    except FileNotFoundError:
        raise TraceSourceError(f"{path}: no such object") from None
    except Exception as exc:  # network and credential errors come in many types
        from stepscope.io.cloud_errors import storage_error

        raise TraceSourceError(storage_error(path, exc)) from None
    if not blob:
        raise TraceFormatError(f"{path}: file is empty")
    version = info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified")
    stat_key = f"{path}|{info.get('size')}|{version}" if version is not None else None
    if blob[:2] == GZIP_MAGIC:
        url_notes: list[str] = []
        return RawSource(path, True, stat_key, None, lambda: _inflate(path, blob, url_notes),
                         url_notes)
    return RawSource(path, False, stat_key, None, lambda: blob)


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
            head = fh.read(n)
            if head[:2] != GZIP_MAGIC:
                return bytes(head)
            fh.seek(0)
            with gzip.GzipFile(fileobj=fh) as gz:
                return gz.read(n)
    except Exception:  # read_source raises its one-line error, or salvages a cut gzip
        return bytes(read_source(path, storage_options).data[:n])


def read_source(path: str, storage_options: dict[str, Any] | None = None) -> RawSource:
    """Return the (inflated) bytes of ``path``; raises StepscopeError with a one-line message."""
    if is_url(path):
        return _read_url(path, storage_options)
    return _read_local(path)
