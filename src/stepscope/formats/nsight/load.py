"""Load Nsight Systems exports through the cache (called from formats.load)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile

from stepscope.errors import TraceSourceError
from stepscope.formats.nsight.export import export_sqlite
from stepscope.formats.nsight.sqlite import READER_VERSION, read_nsys
from stepscope.io import cache
from stepscope.io.source import RawSource, is_url, local_path, read_source
from stepscope.model.trace import Trace

__all__ = ["load_report", "load_sqlite"]


def load_sqlite(source: RawSource, *, use_cache: bool = True) -> Trace:
    key = cache.key_for(source, READER_VERSION) if use_cache else None
    if key is not None:
        cached = cache.load(key, source.path)
        if cached is not None:
            return cached
    if source.local_file is not None:
        trace = read_nsys(source.local_file, source.path)
    else:  # sqlite needs a file: a downloaded or inflated export goes to a temp file
        fd, tmp = tempfile.mkstemp(suffix=".sqlite", prefix="stepscope-")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(source.data)
            trace = read_nsys(tmp, source.path)
        finally:
            os.unlink(tmp)
    if key is not None:
        cache.store(key, trace)
    return trace


def load_report(path: str, *, use_cache: bool = True) -> Trace:
    if is_url(path):
        raise TraceSourceError(f"{path}: download the .nsys-rep first (nsys export needs a file)")
    local = local_path(path)
    if not os.path.isfile(local):
        raise TraceSourceError(f"{path}: no such file")
    work = tempfile.mkdtemp(prefix="stepscope-nsys-")
    try:
        sqlite = export_sqlite(local, path, work)
        trace = load_sqlite(read_source(sqlite), use_cache=use_cache)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dataclasses.replace(trace, meta=dataclasses.replace(trace.meta, path=path))
