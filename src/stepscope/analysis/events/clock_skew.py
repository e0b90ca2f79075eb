"""Clock skew between host and device timestamps.

A kernel cannot start before the call that launches it has queued it. Kineto converts
GPU timestamps (CUPTI/roctracer) to the host clock; when that conversion is off, kernels
appear to start before their launching call returns, by the size of the error. Rule
(docs/metrics.md "Clock skew"): among device ops launched by a kernel-launch call
(cudaLaunchKernel, cuLaunchKernel, hip*LaunchKernel: calls that return once the work is
queued; copies, synchronising calls and graph launches are excluded), those that start
more than SKEW_TOLERANCE_NS before the call ends are skewed. A thread descheduled inside
the launch call can produce a few hundred microseconds; more than the tolerance is taken
as skew. Figures that use launch times (launch delay, launch-bound and host-wait gaps)
are then flagged as affected.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events.links import Links
from stepscope.model.trace import Trace

SKEW_TOLERANCE_NS = 1_000_000  # 1 ms

KERNEL_LAUNCH_CALLS = frozenset({
    "cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx",
    "cudaLaunchCooperativeKernel", "hipLaunchKernel", "hipExtLaunchKernel",
    "hipModuleLaunchKernel", "hipExtModuleLaunchKernel",
})
AFFECTED = ("launches.launch_delay_*", "idle.host_wait_us", "findings: launch-bound, gpu-gaps")


@dataclass(frozen=True)
class ClockSkew:
    skewed_ops: int  # device ops starting > tolerance before their launch call ends
    checked_ops: int  # device ops launched by kernel-launch calls
    max_ns: int  # the largest lead
    median_ns: float  # median lead among the skewed ops

    def warning(self) -> str:
        return (f"clock skew: {self.skewed_ops:,} of {self.checked_ops:,} kernels start up to "
                f"{self.max_ns / 1e6:.2f} ms before their launch call returns (tolerance "
                f"{SKEW_TOLERANCE_NS / 1e6:g} ms); launch delays and host-wait figures are "
                "affected")


def _is_kernel_launch(name: str) -> bool:
    return name in KERNEL_LAUNCH_CALLS


def clock_skew(trace: Trace, links: Links | None = None) -> ClockSkew | None:
    """None when no device op starts more than the tolerance before its launch call ends."""
    links = links or Links(trace)
    rt_idx = links.device_runtime
    ok = rt_idx >= 0
    if not ok.any():
        return None
    is_launch = trace.string_ids(_is_kernel_launch)[trace.runtime.name]
    sel = np.flatnonzero(ok)
    sel = sel[is_launch[rt_idx[sel]]]
    if len(sel) == 0:
        return None
    lead = trace.runtime.end[rt_idx[sel]] - trace.device.ts[sel]
    bad = lead > SKEW_TOLERANCE_NS
    if not bad.any():
        return None
    return ClockSkew(skewed_ops=int(bad.sum()), checked_ops=len(sel), max_ns=int(lead.max()),
                     median_ns=float(np.median(lead[bad])))
