"""Find the rank traces of a run: a local directory, a cloud prefix, or a list of paths."""

from __future__ import annotations

import os
from typing import Any

from stepscope.errors import TraceSourceError
from stepscope.io.cloud_errors import not_found, scheme_missing, storage_error
from stepscope.io.source import is_url, local_path

TRACE_SUFFIXES = (".pt.trace.json", ".pt.trace.json.gz", ".json", ".json.gz")
# JSON that stepscope writes beside a run's traces and that is not a trace
# (``stepscope monitor`` / ``stepscope run --monitor``)
COMPANION_NAMES = frozenset({"monitor.json"})


def _is_trace_name(name: str) -> bool:
    return (name.endswith(TRACE_SUFFIXES) and not name.startswith(".")
            and name not in COMPANION_NAMES)


def is_run_location(path: str, storage_options: dict[str, Any] | None = None) -> bool:
    """True for a local directory or a cloud prefix (a URL ending in '/' or naming a folder)."""
    if not is_url(path):
        return os.path.isdir(local_path(path))
    if path.endswith("/"):
        return True
    import fsspec

    try:
        fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
        return bool(fs.isdir(fs_path))
    except Exception:  # the single-trace reader reports what is wrong
        return False


def list_traces(path: str, storage_options: dict[str, Any] | None = None) -> list[str]:
    """Trace files directly inside ``path`` (sorted by name); raises TraceSourceError."""
    if not is_url(path):
        local = local_path(path)
        try:
            names = sorted(n for n in os.listdir(local) if _is_trace_name(n)
                           and os.path.isfile(os.path.join(local, n)))
        except OSError as exc:
            raise TraceSourceError(f"{path}: cannot list ({exc.strerror or exc})") from None
        found = [os.path.join(local, n) for n in names]
    else:
        import fsspec

        try:
            fs, fs_path = fsspec.core.url_to_fs(path, **(storage_options or {}))
            entries = fs.ls(fs_path.rstrip("/"), detail=False)
            scheme = path.split("://", 1)[0]
        except ImportError as exc:
            raise TraceSourceError(scheme_missing(path, exc)) from None
        except FileNotFoundError as exc:
            raise TraceSourceError(not_found(path, exc, "prefix")) from None
        except Exception as exc:  # credentials, network: one line, never the secret
            raise TraceSourceError(storage_error(path, exc, "list")) from None
        found = sorted(f"{scheme}://{e}" for e in entries
                       if _is_trace_name(str(e).rsplit("/", 1)[-1]))
    if not found:
        raise TraceSourceError(f"{path}: no trace files (*.json, *.json.gz) in this folder")
    return found
