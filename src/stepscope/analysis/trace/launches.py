"""Kernel launch statistics (Holistic Trace Analysis' definitions, all launch APIs).

For every launch call (cudaLaunchKernel[ExC], cuLaunchKernel, hip*Launch*, cudaGraphLaunch,
async memcpy/memset) joined to its device work by correlation id:
cpu = duration of the call, gpu = duration of the work it launched (sum for graphs),
launch delay = max(0, first device start - call end), which includes queueing.
Short kernels: cpu <= 50 µs and gpu < cpu; runtime outliers: cpu > 50 µs;
launch-delay outliers: delay > 100 µs. HTA ignores cuLaunchKernel (Triton), hip (AMD)
and CUDA graph launches; we count them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events.links import Links
from stepscope.classify import names
from stepscope.model.trace import Trace

RUNTIME_CUTOFF_NS = 50_000
LAUNCH_DELAY_CUTOFF_NS = 100_000


@dataclass(frozen=True)
class LaunchStats:
    rank: int
    launches: int
    short_kernels: int
    runtime_outliers: int
    launch_delay_outliers: int
    cpu_total_ns: int
    gpu_total_ns: int
    delay_mean_ns: float
    delay_p50_ns: float
    delay_p95_ns: float
    delay_max_ns: int
    short_kernel_gpu_ns: int  # device time of the short kernels
    short_kernel_cpu_ns: int  # host time spent launching them


def launch_stats(trace: Trace, links: Links | None = None) -> LaunchStats | None:
    links = links or Links(trace)
    rt = trace.runtime
    is_launch = names.mask(trace, names.is_launch_call)[rt.name]
    dev_rt = links.device_runtime
    has = dev_rt >= 0
    if not has.any():
        return None
    n = len(rt)
    first = np.full(n, np.iinfo(np.int64).max)
    np.minimum.at(first, dev_rt[has], trace.device.ts[has])
    gpu = np.bincount(dev_rt[has], weights=trace.device.dur[has].astype(np.float64), minlength=n)
    sel = np.flatnonzero(is_launch & (first < np.iinfo(np.int64).max))
    if len(sel) == 0:
        return None
    cpu = rt.dur[sel]
    g = gpu[sel].astype(np.int64)
    delay = np.maximum(first[sel] - rt.end[sel], 0)
    short = (cpu <= RUNTIME_CUTOFF_NS) & (g < cpu)
    return LaunchStats(
        rank=trace.meta.rank or 0,
        launches=len(sel),
        short_kernels=int(short.sum()),
        runtime_outliers=int((cpu > RUNTIME_CUTOFF_NS).sum()),
        launch_delay_outliers=int((delay > LAUNCH_DELAY_CUTOFF_NS).sum()),
        cpu_total_ns=int(cpu.sum()),
        gpu_total_ns=int(g.sum()),
        delay_mean_ns=float(delay.mean()),
        delay_p50_ns=float(np.percentile(delay, 50)),
        delay_p95_ns=float(np.percentile(delay, 95)),
        delay_max_ns=int(delay.max()),
        short_kernel_gpu_ns=int(g[short].sum()),
        short_kernel_cpu_ns=int(cpu[short].sum()),
    )
