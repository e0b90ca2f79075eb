"""Pick the reader for a source and go through the cache."""

from __future__ import annotations

from typing import Any

from stepscope.errors import TraceFormatError
from stepscope.formats import kinds
from stepscope.formats.kineto.reader import (
    READER_VERSION,
    ProgressFn,
    read_kineto,
)
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
    if path.lower().endswith(kinds.NSYS_REPORT_SUFFIXES):  # .nsys-rep: exported to SQLite first
        from stepscope.formats.nsight import load as nsys_load  # only for Nsight inputs

        return nsys_load.load_report(path, use_cache=use_cache)
    source = read_source(path, storage_options)
    # (a gzip is inflated only when named like an export: Kineto cache hits stay lazy)
    if (not source.compressed or path.lower().endswith(".sqlite.gz")) and \
            kinds.content_kind(source.head(64)) is kinds.NSYS_SQLITE:
        from stepscope.formats.nsight import load as nsys_load

        return nsys_load.load_sqlite(source, use_cache=use_cache)
    key = None
    if use_cache:
        key = cache.key_for(source, READER_VERSION)
        cached = cache.load(key, source.path)  # a URL's path as shown: no credentials
        if cached is not None:
            return cached
    kind = kinds.content_kind(source.head(kinds.HEAD_BYTES), path)
    if kind is not kinds.KINETO:
        raise TraceFormatError(not_a_trace(path, kind))
    trace = read_kineto(source, workers=workers, progress=progress)
    if key is not None:
        cache.store(key, trace)
    return trace


def not_a_trace(path: str, kind: kinds.Kind) -> str:
    """Why ``path`` is no trace, for each kind the trace reader does not take."""
    if kind is kinds.EMPTY:
        return f"{path}: file is empty (only whitespace)"
    if kind is kinds.MEMORY_SNAPSHOT:
        return (f"{path}: a pickle, not a trace (for a CUDA memory snapshot use: "
                "stepscope memory)")
    if kind is kinds.TRTEXEC:
        return (f"{path}: a TensorRT trtexec output, not a profiler trace; `stepscope report` "
                "reads those from a local file or folder (API: "
                "stepscope.formats.tensorrt.load.load_trt_run)")
    if kind in (kinds.SAVED_REPORT, kinds.SAVED_DIFF):
        return (f"{path}: a stepscope report or diff, not a trace (compare saved reports "
                "with: stepscope diff)")
    if kind is kinds.MONITOR:
        return (f"{path}: a stepscope monitor file, not a trace (stepscope monitor wrote it; "
                "its samples are in monitor.parquet beside it)")
    if kind is kinds.MEMORY_TIMELINE:
        return (f"{path}: a memory timeline, not a trace (for memory timelines use: "
                "stepscope memory)")
    return (f"{path}: not a trace stepscope can read (expected PyTorch profiler JSON or an "
            "Nsight Systems SQLite export)")
