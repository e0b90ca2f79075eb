"""Reader for ``torch.cuda.memory._dump_snapshot`` pickles, through a restricted unpickler.

A pickle can run arbitrary code while it loads, so snapshots are read by an unpickler that
builds only plain containers and scalars (dict, list, tuple, set, str, bytes, int, float,
bool, None): every opcode that would name a class or function (GLOBAL, STACK_GLOBAL,
INST, EXT*) goes through ``find_class``, which refuses everything, and persistent ids are
refused too. A hostile pickle therefore fails with one line and runs nothing.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

from stepscope.errors import TraceFormatError, one_line
from stepscope.io.source import read_source
from stepscope.model.memory_files import MemorySnapshot

PICKLE_PROTO = b"\x80"


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"refused to load {module}.{name}: snapshots hold only "
                                     "plain data")

    def persistent_load(self, pid: Any) -> Any:
        raise pickle.UnpicklingError("refused a persistent id: snapshots hold only plain data")


def loads_plain(data: bytes | memoryview, path: str) -> Any:
    """Unpickle plain data; anything else raises TraceFormatError (one line)."""
    try:
        return _PlainUnpickler(io.BytesIO(bytes(data))).load()
    except RecursionError:
        raise TraceFormatError(f"{path}: not a memory snapshot (pickle nested too deeply)") \
            from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError,
            AttributeError, OverflowError, MemoryError, UnicodeDecodeError) as exc:
        raise TraceFormatError(one_line(f"{path}: not a memory snapshot pickle ({exc})")) \
            from None


def _dicts(value: Any, what: str, path: str) -> tuple[dict[str, Any], ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, dict) for v in value):
        raise TraceFormatError(f"{path}: memory snapshot: {what} is not a list of records")
    return tuple(value)


def snapshot_from_data(obj: Any, path: str) -> MemorySnapshot:
    if isinstance(obj, list | tuple):  # torch.cuda.memory_snapshot(): the segments alone
        obj = {"segments": obj}
    if not isinstance(obj, dict) or ("segments" not in obj and "device_traces" not in obj):
        raise TraceFormatError(f"{path}: not a memory snapshot (no 'segments' or "
                               "'device_traces')")
    segments = _dicts(obj.get("segments", []), "'segments'", path)
    traces_raw = obj.get("device_traces", [])
    if not isinstance(traces_raw, list | tuple):
        raise TraceFormatError(f"{path}: memory snapshot: 'device_traces' is not a list")
    traces = tuple(_dicts(t, f"device_traces[{i}]", path) for i, t in enumerate(traces_raw))
    return MemorySnapshot(path=path, segments=segments, device_traces=traces,
                          keys=tuple(sorted(str(k) for k in obj)))


def read_snapshot(path: str, storage_options: dict[str, Any] | None = None) -> MemorySnapshot:
    """Read a snapshot pickle (optionally gzip-compressed) from a path or URL."""
    data = read_source(path, storage_options).data
    if bytes(data[:1]) != PICKLE_PROTO:
        raise TraceFormatError(f"{path}: not a memory snapshot (not a pickle of protocol 2+)")
    return snapshot_from_data(loads_plain(data, path), path)
