"""Where traces go: ``<logdir>/<run>/<host>_<pid>[_rank<r>].<ms>.pt.trace.json.gz``.

The layout is torch-tb-profiler's (one folder per run, one file per worker and cycle), so
``stepscope report <logdir>/<run>`` and older tools read it unchanged.
"""

from __future__ import annotations

import os
import re
import sys
import time

from stepscope.capture import env
from stepscope.io.source import is_url

TRACE_SUFFIX = ".pt.trace.json"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def default_run_name(*, distributed: bool | None = None) -> str:
    """A run name every rank of a job agrees on without talking to the others.

    Explicit ``STEPSCOPE_RUN`` wins; under torchrun its run id; a single process gets the
    script name plus the start time; ranks of a job without a run id share the script name
    (their files still differ by host, pid, rank and time).
    """
    explicit = os.environ.get("STEPSCOPE_RUN")
    if explicit:
        return safe_name(explicit)
    elastic = os.environ.get("TORCHELASTIC_RUN_ID")
    if elastic and elastic != "none":
        return safe_name(elastic)
    script = os.path.splitext(os.path.basename(sys.argv[0] or ""))[0] or "python"
    if script in ("-c", "-m", ""):
        script = "python"
    if distributed is None:
        distributed = env.is_distributed()
    if distributed:
        return safe_name(script)
    return safe_name(f"{script}-{time.strftime('%Y%m%d-%H%M%S')}")


def safe_name(name: str) -> str:
    cleaned = _UNSAFE.sub("_", name).strip("._")
    return cleaned or "run"


def join(base: str, *parts: str) -> str:
    """Join path parts for a local directory or an fsspec URL (always '/' in URLs)."""
    if is_url(base):
        return "/".join([base.rstrip("/"), *parts])
    return os.path.join(base, *parts)


def worker_name(rank: int | None = None) -> str:
    rank = env.current_rank() if rank is None else rank
    name = f"{env.hostname()}_{os.getpid()}"
    return f"{name}_rank{rank}" if rank is not None else name


def trace_file_name(rank: int | None = None, *, gzip: bool = True,
                    now_ms: int | None = None) -> str:
    ms = int(time.time() * 1000) if now_ms is None else now_ms
    return f"{worker_name(rank)}.{ms}{TRACE_SUFFIX}{'.gz' if gzip else ''}"
