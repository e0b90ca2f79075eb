"""Memory files that are not traces: allocator snapshots and categorised memory timelines.

``MemorySnapshot`` holds the plain data of ``torch.cuda.memory._snapshot()`` (as the
restricted unpickler built it: dicts, lists, tuples, strings, numbers); ``MemoryTimeline``
holds ``profile.export_memory_timeline`` output as bytes per category over time.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# torch.profiler._memory_profiler's category order (the index written in raw exports)
TIMELINE_CATEGORIES = (
    "parameter",
    "optimizer_state",
    "input",
    "temporary",
    "activation",
    "gradient",
    "autograd_detail",
    "unknown",
)


@dataclass(frozen=True)
class MemorySnapshot:
    path: str
    segments: tuple[dict[str, Any], ...]
    device_traces: tuple[tuple[dict[str, Any], ...], ...]  # index = device
    keys: tuple[str, ...]  # top-level keys present (allocator_settings, ...)


@dataclass(frozen=True)
class MemoryTimeline:
    path: str
    raw: bool  # True: the .raw.json.gz export (one row per event)
    t_ns: npt.NDArray[np.int64]  # distinct times, ascending
    sizes: npt.NDArray[np.int64]  # (len(t_ns), len(TIMELINE_CATEGORIES)) bytes in use
