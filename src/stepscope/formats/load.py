"""Pick the reader for a source and go through the cache."""

from __future__ import annotations

from typing import Any

from stepscope.errors import TraceFormatError
from stepscope.formats.kineto.reader import (
    READER_VERSION,
    ProgressFn,
    looks_like_kineto,
    read_kineto,
)
from stepscope.formats.nsight import load as nsys_load
from stepscope.io import cache
from stepscope.io.source import read_source
from stepscope.model.trace import Trace


def load_trace(
    path: str,
    *,
    use_cache: bool = True,
    storage_options: dict[str, Any] | None = None,
    workers: int | None = None,
    progress: ProgressFn | None = None,
) -> Trace:
    """Read any supported trace at ``path`` (local path or fsspec URL)."""
    if nsys_load.is_report(path):  # .nsys-rep: exported to SQLite first
        return nsys_load.load_report(path, use_cache=use_cache)
    source = read_source(path, storage_options)
    # (a gzip is inflated only when named like an export: Kineto cache hits stay lazy)
    if (not source.compressed or path.lower().endswith(".sqlite.gz")) and \
            nsys_load.looks_like_sqlite(source.data):
        return nsys_load.load_sqlite(source, use_cache=use_cache)
    key = None
    if use_cache:
        key = cache.key_for(source, READER_VERSION)
        cached = cache.load(key, path)
        if cached is not None:
            return cached
    _reject_trtexec(path, bytes(source.data[:4096]))
    if not looks_like_kineto(source.data):
        if not bytes(source.data[:4096]).strip():
            raise TraceFormatError(f"{path}: file is empty (only whitespace)")
        if bytes(source.data[:1]) == b"\x80":  # a pickle: a memory snapshot, not a trace
            raise TraceFormatError(f"{path}: a pickle, not a trace (for a CUDA memory "
                                   "snapshot use: stepscope memory)")
        raise TraceFormatError(
            f"{path}: not a trace stepscope can read (expected PyTorch profiler JSON or an "
            "Nsight Systems SQLite export)"
        )
    trace = read_kineto(source, workers=workers, progress=progress)
    if key is not None:
        cache.store(key, trace)
    return trace


def _reject_trtexec(path: str, head: bytes) -> None:
    """trtexec exports are JSON too: name them instead of failing as a broken trace."""
    from stepscope.formats.tensorrt.load import sniff

    if sniff(head.decode("utf-8", "replace")) not in (None, "output"):
        raise TraceFormatError(
            f"{path}: a TensorRT trtexec output, not a profiler trace; `stepscope report` reads "
            "those from a local file or folder (API: stepscope.formats.tensorrt.load.load_trt_run)"
        )
