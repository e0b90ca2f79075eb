"""``export_trace``: write a profiler's trace anywhere, as often as asked.

torch refuses a second ``export_chrome_trace`` ("Trace is already saved"): Kineto hands
its buffers over on the first save. We remember where each profiling cycle was first
written and copy that file for later calls, so exporting twice (once by ``on_trace_ready``,
once by the user) just works. Output is gzip when the name ends in ``.gz``; fsspec URLs
(s3://, gs://, az://, memory://) are written through fsspec.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any

from stepscope.errors import TraceSourceError, UsageError
from stepscope.io.source import GZIP_MAGIC, gzip_impl, is_url, local_path

# isal's GzipFile when installed (same format, several times faster), else the stdlib's
_GzipFile: Any = gzip_impl.GzipFile

_COPY_CHUNK = 4 << 20
# autograd-level profiler object (one per profiling cycle) -> first file written for it
_WRITTEN: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()


def export_trace(prof: Any, path: str, *, storage_options: dict[str, Any] | None = None) -> str:
    """Write ``prof``'s last cycle as Chrome-trace JSON to ``path``; returns ``path``.

    ``prof`` is a ``torch.profiler.profile`` (or ``torch.autograd.profiler.profile``).
    Safe to call repeatedly and after ``on_trace_ready`` already wrote the cycle.
    """
    cycle = _cycle_of(prof)
    previous = _WRITTEN.get(cycle)
    if previous is not None and _readable(previous, storage_options):
        if previous != path:
            _copy(previous, path, storage_options)
        return path
    with tempfile.TemporaryDirectory(prefix="stepscope-export-") as tmp:
        raw = os.path.join(tmp, "trace.json")
        _export_json(prof, raw)
        _copy(raw, path, storage_options)
    _WRITTEN[cycle] = path
    return path


def _cycle_of(prof: Any) -> Any:
    # torch.profiler.profile keeps a fresh autograd profiler per cycle in ``.profiler``.
    inner = getattr(prof, "profiler", prof)
    if inner is None:
        raise UsageError("export_trace: the profiler has not recorded anything yet "
                         "(call it after the profiled block or from on_trace_ready)")
    return inner


def _export_json(prof: Any, path: str) -> None:
    try:
        prof.export_chrome_trace(path)
    except RuntimeError as exc:
        if "already saved" not in str(exc):
            raise
        # Somebody called torch's exporter directly before us: Kineto's buffers are gone,
        # but torch's Python exporter can still rebuild the JSON from the kept results.
        prof.export_chrome_trace(path, use_python_export=True)
    except AssertionError as exc:  # torch asserts when nothing was recorded
        raise UsageError(f"export_trace: {exc}") from None


def _readable(path: str, storage_options: dict[str, Any] | None) -> bool:
    if not is_url(path):
        return os.path.isfile(path)
    import fsspec

    fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
    return bool(fs.exists(fs_path))


def _copy(src: str, dst: str, storage_options: dict[str, Any] | None) -> None:
    """Copy a trace, (de)compressing so the bytes match ``dst``'s name."""
    with _open_plain(src, storage_options) as fin, _open_out(dst, storage_options) as fout:
        shutil.copyfileobj(fin, fout, _COPY_CHUNK)


@contextmanager
def _open_plain(path: str, storage_options: dict[str, Any] | None) -> Iterator[IO[bytes]]:
    """The uncompressed bytes of ``path``, whatever its compression."""
    with _open_raw(path, "rb", storage_options) as fh:
        magic = fh.read(2)
        fh.seek(0)
        if magic == GZIP_MAGIC:
            with _GzipFile(fileobj=fh, mode="rb") as gz:
                yield gz
        else:
            yield fh


@contextmanager
def _open_out(path: str, storage_options: dict[str, Any] | None) -> Iterator[IO[bytes]]:
    with _open_raw(path, "wb", storage_options) as fh:
        if path.endswith(".gz"):
            # No name, mtime 0: exporting the same cycle twice gives identical bytes.
            with _GzipFile(filename="", fileobj=fh, mode="wb", mtime=0) as gz:
                yield gz
        else:
            yield fh


@contextmanager
def _open_raw(path: str, mode: str, storage_options: dict[str, Any] | None) -> Iterator[IO[bytes]]:
    if is_url(path):
        import fsspec

        try:
            fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
            fh = fs.open(fs_path, mode)
        except ImportError as exc:
            raise TraceSourceError(f"{path}: support for this URL scheme is not installed "
                                   f"({exc})") from None
        except Exception as exc:  # unknown scheme, network and credential errors
            raise TraceSourceError(f"{path}: cannot open ({type(exc).__name__}: {exc})") from None
        with fh:
            yield fh
        return
    local = local_path(path)
    if mode == "rb":
        with open(local, "rb") as fh:
            yield fh
        return
    # Write beside the target and rename: a reader never sees half a trace. (Not mkstemp:
    # its 0600 mode would make traces unreadable to the rest of a team.)
    tmp = f"{local}.{os.getpid()}-{uuid.uuid4().hex[:8]}.part"
    try:
        os.makedirs(os.path.dirname(os.path.abspath(local)), exist_ok=True)
        out = open(tmp, "wb")  # noqa: SIM115 - closed by the with-block below
    except OSError as exc:
        raise TraceSourceError(f"{path}: cannot write ({exc.strerror or exc})") from None
    try:
        with out:
            yield out
        os.replace(tmp, local)
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise
