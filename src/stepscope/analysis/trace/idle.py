"""Why the GPU sat idle, per stream (Holistic Trace Analysis' idle-time breakdown).

Each gap between consecutive device ops on a stream is
- host wait: the runtime call launching the next op started after the stream went idle
  (the GPU was starved by the CPU);
- kernel wait: otherwise, when the gap is shorter than 30 µs (launch overhead between
  back-to-back kernels);
- other: longer gaps with the work already queued (waits on events, other streams).
Gaps are measured from the running maximum of previous ends, so overlapping ops on one
stream never produce the negative gaps HTA counts as kernel wait.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events.links import Links, gather
from stepscope.model.trace import Trace

KERNEL_WAIT_NS = 30_000


@dataclass(frozen=True)
class StreamIdle:
    rank: int
    device: int
    stream: int
    span_ns: int
    busy_ns: int
    host_wait_ns: int
    kernel_wait_ns: int
    other_ns: int
    largest_gaps: tuple[tuple[int, int, str], ...]  # (start ns, length ns, category)

    @property
    def idle_ns(self) -> int:
        return self.host_wait_ns + self.kernel_wait_ns + self.other_ns


def idle_breakdown(
    trace: Trace, links: Links | None = None, keep_gaps: int = 5
) -> list[StreamIdle]:
    links = links or Links(trace)
    dev = trace.device
    if len(dev) == 0:
        return []
    launch_ts = gather(trace.runtime.ts, links.device_runtime, -1)
    out = []
    # One stable sort groups the ops by (device, stream) and keeps each group in time order
    # (the table is sorted by start); then walk the groups, not the events.
    order = np.lexsort((dev.stream, dev.device))
    device_col, stream_col = dev.device[order], dev.stream[order]
    cut = np.flatnonzero((np.diff(device_col) != 0) | (np.diff(stream_col) != 0)) + 1
    for sel in np.split(order, cut):
        device, stream = dev.device[sel[0]], dev.stream[sel[0]]
        ts, end, launch = dev.ts[sel], dev.end[sel], launch_ts[sel]
        prev_end = np.maximum.accumulate(end)[:-1]
        gap = ts[1:] - prev_end
        host_wait = (launch[1:] > prev_end) & (gap > 0)
        kernel_wait = ~host_wait & (gap > 0) & (gap < KERNEL_WAIT_NS)
        other = ~host_wait & (gap >= KERNEL_WAIT_NS)
        span = int(end.max() - ts[0])
        positive = np.flatnonzero(gap > 0)
        top = positive[np.argsort(-gap[positive], kind="stable")[:keep_gaps]]
        labels = np.where(host_wait, "host_wait", np.where(kernel_wait, "kernel_wait", "other"))
        out.append(
            StreamIdle(
                rank=trace.meta.rank or 0,
                device=int(device),
                stream=int(stream),
                span_ns=span,
                busy_ns=span - int(gap[gap > 0].sum()),
                host_wait_ns=int(gap[host_wait].sum()),
                kernel_wait_ns=int(gap[kernel_wait].sum()),
                other_ns=int(gap[other].sum()),
                largest_gaps=tuple((int(prev_end[i]), int(gap[i]), str(labels[i])) for i in top),
            )
        )
    return out
