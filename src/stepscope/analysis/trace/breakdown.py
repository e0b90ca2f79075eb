"""Per-step time breakdown with torch-tb-profiler's priority semantics.

Each category's events are merged into a union; walking the categories in priority
order, each claims the part of its union not yet claimed by a higher one; "other" is
what is left of the step. The eight values of a step therefore sum to its duration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links, gather
from stepscope.analysis.events.steps import Steps
from stepscope.classify import names
from stepscope.model.trace import (
    DEV_KERNEL,
    DEV_MEMCPY,
    DEV_MEMSET,
    HOST_PYTHON,
    Trace,
)

CATEGORIES = (
    "kernel",
    "memcpy",
    "memset",
    "communication",
    "runtime",
    "dataloader",
    "cpu_exec",
    "other",
)


@dataclass(frozen=True)
class StepBreakdown:
    name: str
    start: int  # ns
    duration: int  # ns
    ns: dict[str, int]  # category -> ns inside the step


@dataclass(frozen=True)
class Breakdown:
    steps: tuple[StepBreakdown, ...]
    avg_step_ns: float
    avg_ns: dict[str, float]

    @property
    def pct(self) -> dict[str, float]:
        total = self.avg_step_ns
        return {k: (100.0 * v / total if total > 0 else 0.0) for k, v in self.avg_ns.items()}


def category_unions(trace: Trace, links: Links | None = None) -> dict[str, iv.Union]:
    """The union of each category's ranges, before priorities are applied."""
    links = links or Links(trace)
    dev, host, rt = trace.device, trace.host, trace.runtime
    ranges = host.kind != HOST_PYTHON  # operators and annotations; Python frames never count
    collective_host = ranges & names.mask(trace, names.is_collective_host)[host.name]
    is_step = names.mask(trace, names.is_profiler_step)[host.name]
    is_loader = ranges & names.mask(trace, names.is_dataloader)[host.name]
    cpu_exec = ranges & ~is_step & ~is_loader & ~collective_host
    # A kernel is communication when its name says NCCL/RCCL, or when it belongs to a
    # collective host op: by external id (kernels carry it) or through its launching call.
    coll_ext = host.external_id[collective_host]
    kernel = dev.kind == DEV_KERNEL
    dev_is_coll = (
        names.mask(trace, names.is_collective_kernel)[dev.name]
        | np.isin(dev.external_id, coll_ext[coll_ext > 0])
        | gather(collective_host, links.device_host, False)
    )
    dev_end, host_end = dev.end, host.end
    return {
        "kernel": iv.union(dev.ts[kernel & ~dev_is_coll], dev_end[kernel & ~dev_is_coll]),
        "memcpy": iv.union(dev.ts[dev.kind == DEV_MEMCPY], dev_end[dev.kind == DEV_MEMCPY]),
        "memset": iv.union(dev.ts[dev.kind == DEV_MEMSET], dev_end[dev.kind == DEV_MEMSET]),
        "communication": iv.union(
            np.concatenate((dev.ts[kernel & dev_is_coll], host.ts[collective_host])),
            np.concatenate((dev_end[kernel & dev_is_coll], host_end[collective_host])),
        ),
        "runtime": iv.union(rt.ts, rt.end),
        "dataloader": iv.union(host.ts[is_loader], host_end[is_loader]),
        "cpu_exec": iv.union(host.ts[cpu_exec], host_end[cpu_exec]),
    }


def step_breakdown(trace: Trace, steps: Steps, links: Links | None = None) -> Breakdown:
    unions = category_unions(trace, links)
    lo = np.array([s.start for s in steps.steps], dtype=np.int64)
    hi = np.array([s.end for s in steps.steps], dtype=np.int64)
    window = iv.union(lo, hi)
    claimed = iv.EMPTY
    per_cat: dict[str, np.ndarray] = {}
    for cat in CATEGORIES[:-1]:
        take = iv.subtract(iv.intersect(unions[cat], window), claimed)
        per_cat[cat] = iv.measure_in(take, lo, hi)
        claimed = iv.merge(claimed, take)
    durations = hi - lo
    per_cat["other"] = durations - sum(per_cat[c] for c in CATEGORIES[:-1])
    rows = tuple(
        StepBreakdown(s.name, s.start, s.duration, {c: int(per_cat[c][i]) for c in CATEGORIES})
        for i, s in enumerate(steps.steps)
    )
    n = len(rows)
    avg = {c: float(per_cat[c].sum()) / n for c in CATEGORIES}
    return Breakdown(rows, float(durations.sum()) / n, avg)
