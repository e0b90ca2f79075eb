"""Communication kernels of one trace: how much, which, and how much is exposed.

Communication kernels are those the table in ``stepscope.classify.communication`` names,
plus every kernel launched by a host op the trace marks as a collective (``nccl:*``,
``c10d::*``, ``record_param_comms``), joined by external id or through the launching
runtime call. Over the steps, on each device:

- communication time = |union of communication kernels ∩ steps|
- exposed = |union of communication kernels ∖ union of compute kernels| ∩ steps: the
  time communication runs with no computation beside it (the step waits for it)
- overlap % = 100 · (communication − exposed) / communication
The exposed figure of the device with the most of it is the trace's figure.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links, gather
from stepscope.analysis.events.steps import Steps
from stepscope.classify import names
from stepscope.classify.communication import communication_family
from stepscope.model.trace import DEV_KERNEL, HOST_PYTHON, Trace

B = npt.NDArray[np.bool_]


def communication_mask(trace: Trace, links: Links | None = None) -> B:
    """For each device op: is it a communication kernel?"""
    links = links or Links(trace)
    dev, host = trace.device, trace.host
    coll_host = (host.kind != HOST_PYTHON) & names.mask(trace, names.is_collective_host)[host.name]
    coll_ext = host.external_id[coll_host]
    by_name = names.mask(trace, names.is_collective_kernel)[dev.name]
    linked = np.isin(dev.external_id, coll_ext[coll_ext > 0]) | gather(
        coll_host, links.device_host, False
    )
    out: B = (dev.kind == DEV_KERNEL) & (by_name | linked)
    return out


@dataclass(frozen=True)
class CommKernel:
    name: str
    family: str  # row of the table ("NCCL", "DeepEP", ...) or "marked by the trace"
    calls: int
    total_ns: int


@dataclass(frozen=True)
class Communication:
    device: int  # the device with the most exposed communication
    kernel_ns: int  # Σ communication kernel durations, whole trace, all devices
    all_kernel_ns: int  # Σ all kernel durations, whole trace
    comm_per_step_ns: float  # |union of communication kernels ∩ steps| / steps, on `device`
    exposed_per_step_ns: float  # communication not overlapped by compute kernels, per step
    step_ns: float  # average step
    top: tuple[CommKernel, ...]

    @property
    def share_pct(self) -> float:
        """Communication kernel time, % of all kernel time."""
        return 100.0 * self.kernel_ns / self.all_kernel_ns if self.all_kernel_ns else 0.0

    @property
    def overlap_pct(self) -> float:
        c = self.comm_per_step_ns
        return 100.0 * (c - self.exposed_per_step_ns) / c if c > 0 else 0.0

    @property
    def exposed_pct(self) -> float:
        """Exposed communication, % of the average step."""
        return 100.0 * self.exposed_per_step_ns / self.step_ns if self.step_ns > 0 else 0.0


def communication(
    trace: Trace, steps: Steps, links: Links | None = None, top: int = 5
) -> Communication | None:
    """None when the trace has no communication kernel."""
    dev = trace.device
    comm = communication_mask(trace, links)
    if not comm.any():
        return None
    kernel = dev.kind == DEV_KERNEL
    lo = np.array([s.start for s in steps.steps], dtype=np.int64)
    hi = np.array([s.end for s in steps.steps], dtype=np.int64)
    window = iv.union(lo, hi)
    n = max(len(steps.steps), 1)
    best = (-1.0, -1, 0.0)
    for device in np.unique(dev.device[comm]):
        on = dev.device == device
        c = iv.intersect(iv.union(dev.ts[comm & on], dev.end[comm & on]), window)
        compute = kernel & ~comm & on
        exposed = iv.subtract(c, iv.union(dev.ts[compute], dev.end[compute]))
        e = iv.length(exposed) / n
        if e > best[0]:
            best = (e, int(device), iv.length(c) / n)
    ids, inv = np.unique(dev.name[comm], return_inverse=True)
    totals = np.bincount(inv, weights=dev.dur[comm].astype(np.float64))
    calls = np.bincount(inv)
    order = np.argsort(-totals, kind="stable")[:top]
    rows = []
    for i in order:
        name = trace.name(int(ids[i]))
        rows.append(CommKernel(name, communication_family(name) or "marked by the trace",
                               int(calls[i]), int(totals[i])))
    durations = (hi - lo).astype(np.float64)
    return Communication(
        device=best[1],
        kernel_ns=int(dev.dur[comm].sum()),
        all_kernel_ns=int(dev.dur[kernel].sum()),
        comm_per_step_ns=best[2],
        exposed_per_step_ns=best[0],
        step_ns=float(durations.sum()) / n,
        top=tuple(rows),
    )
