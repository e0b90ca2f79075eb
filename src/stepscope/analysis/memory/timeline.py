"""Memory by category over time, from ``export_memory_timeline`` output."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.memory.records import _downsample
from stepscope.model.memory_files import TIMELINE_CATEGORIES, MemoryTimeline

I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class CategoryTimeline:
    categories: tuple[str, ...]
    origin_ns: int
    t_ns: I64  # down-sampled times (the peak is one of them)
    sizes: I64  # (len(t_ns), len(categories)) bytes
    peak_bytes: int
    peak_ns: int
    at_peak: dict[str, int]  # bytes per category at the peak
    max_by_category: dict[str, int]


def category_timeline(tl: MemoryTimeline) -> CategoryTimeline:
    total = tl.sizes.sum(axis=1) if len(tl.t_ns) else np.zeros(0, dtype=np.int64)
    if len(total) == 0:
        zero = dict.fromkeys(TIMELINE_CATEGORIES, 0)
        return CategoryTimeline(TIMELINE_CATEGORIES, 0, total, tl.sizes, 0, 0, zero, zero)
    p = int(np.argmax(total))
    keep = _downsample(total.astype(np.int64), p)
    return CategoryTimeline(
        categories=TIMELINE_CATEGORIES, origin_ns=int(tl.t_ns[0]),
        t_ns=tl.t_ns[keep], sizes=tl.sizes[keep],
        peak_bytes=int(total[p]), peak_ns=int(tl.t_ns[p]),
        at_peak={c: int(v) for c, v in zip(TIMELINE_CATEGORIES, tl.sizes[p], strict=True)},
        max_by_category={c: int(v) for c, v in
                         zip(TIMELINE_CATEGORIES, tl.sizes.max(axis=0), strict=True)},
    )
