"""Training steps: ``ProfilerStep#N`` ranges, extended to cover their device work.

Semantics follow torch-tb-profiler (see docs/metrics.md "Steps"): host steps are the
ProfilerStep ranges; each step is then stretched to the end of the device work launched
inside it, steps never overlap, and a trailing step that launched no (or clearly less)
device work is dropped as an incomplete capture. Without ProfilerStep ranges the whole
trace is one step.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.links import Links, gather
from stepscope.classify import names
from stepscope.errors import TraceFormatError, UsageError
from stepscope.model.trace import HOST_ANNOTATION, HOST_OP, HOST_PYTHON, Trace

I64 = npt.NDArray[np.int64]

TAIL_RATIO = 0.8


@dataclass(frozen=True)
class Step:
    name: str  # the N of ProfilerStep#N ("0" for a trace without steps)
    start: int  # ns, after the device-aware adjustment
    end: int
    host_start: int
    host_end: int
    device_ops: int  # device ops launched by runtime calls inside the host step

    @property
    def duration(self) -> int:
        return self.end - self.start


@dataclass(frozen=True)
class Steps:
    steps: tuple[Step, ...]
    dropped: tuple[str, ...]  # trailing steps removed as incomplete
    profiler_steps: bool  # False: no ProfilerStep#N in the trace, one whole-trace step

    @property
    def window(self) -> tuple[int, int]:
        return self.steps[0].start, self.steps[-1].end


def step_index(steps: Steps, ts: I64) -> I64:
    """The step each time falls in, [start, end); -1 outside every step."""
    if not steps.steps or len(ts) == 0:
        return np.full(len(ts), -1, dtype=np.int64)
    starts = np.array([s.start for s in steps.steps], dtype=np.int64)
    ends = np.array([s.end for s in steps.steps], dtype=np.int64)
    k = np.searchsorted(starts, ts, side="right") - 1
    inside = (k >= 0) & (ts < ends[np.maximum(k, 0)])
    out: I64 = np.where(inside, k, -1)
    return out


def _host_steps(trace: Trace) -> tuple[list[str], np.ndarray, np.ndarray]:
    host = trace.host
    is_step = names.mask(trace, names.is_profiler_step)[host.name] & (host.kind != HOST_PYTHON)
    idx = np.flatnonzero(is_step)
    seen: set[str] = set()
    keep = []
    for i in idx:  # one per step number (some traces repeat them on several threads)
        label = trace.strings[host.name[i]][len("ProfilerStep#") :]
        if label not in seen:
            seen.add(label)
            keep.append(i)
    keep_arr = np.array(keep, dtype=np.int64)
    labels = [trace.strings[host.name[i]][len("ProfilerStep#") :] for i in keep_arr]
    return labels, host.ts[keep_arr], host.end[keep_arr]


def _whole_trace(trace: Trace) -> Steps:
    host = trace.host
    sel = (host.kind == HOST_OP) | (host.kind == HOST_PYTHON)
    if not sel.any():
        sel = host.kind == HOST_ANNOTATION
    starts = [host.ts[sel]]
    ends = [host.end[sel]]
    if len(trace.device):
        starts.append(trace.device.ts)
        ends.append(trace.device.end)
    if not sum(len(x) for x in starts) and len(trace.runtime):
        # only runtime calls (issue 9): the window they span is what there is to report
        starts.append(trace.runtime.ts)
        ends.append(trace.runtime.end)
    s = np.concatenate(starts)
    e = np.concatenate(ends)
    if len(s) == 0:
        if trace.meta.format == "nsys":  # an export without any event: an empty report
            return Steps((Step("0", 0, 0, 0, 0, 0),), (), False)
        raise TraceFormatError(f"{trace.meta.path}: trace has no operator or device events")
    lo, hi = int(s.min()), int(e.max())
    return Steps((Step("0", lo, hi, lo, hi, len(trace.device)),), (), False)


def _within_collection(trace: Trace, labels: list[str], hs: I64,
                       he: I64) -> tuple[list[str], I64, I64]:
    """Host steps clipped to the profiler's collection window (Kineto's "PyTorch Profiler
    (N)" span, ``TraceMeta.window_end``). A ProfilerStep range keeps its real end when it
    is closed after collection stopped (hta/triton_example: a 13.3 s step in a window that
    ends 1.7 ms after it begins), but nothing after the window was recorded: that tail is
    not measured time. Steps that begin after the window are dropped."""
    end = trace.meta.window_end
    if end is None or not len(he) or int(he.max()) <= end:
        return labels, hs, he
    keep = hs < end
    he = np.minimum(he, end)
    return [lab for lab, k in zip(labels, keep.tolist(), strict=True) if k], hs[keep], he[keep]


def find_steps(trace: Trace, links: Links | None = None) -> Steps:
    labels, hs, he = _host_steps(trace)
    labels, hs, he = _within_collection(trace, labels, hs, he)
    if not labels:
        return _whole_trace(trace)
    links = links or Links(trace)
    rt = trace.runtime
    n = len(labels)
    # Which host step fully contains each runtime call.
    k = np.searchsorted(hs, rt.ts, side="right") - 1
    kc = np.maximum(k, 0)
    rt_step = np.where((k >= 0) & (rt.end <= he[kc]), kc, -1)
    dev_rt = links.device_runtime
    dev = trace.device
    dev_step = gather(rt_step, dev_rt, -1)
    inside = dev_step >= 0
    counts = np.bincount(dev_step[inside], minlength=n)
    starts = hs.copy()
    ends = he.copy()
    if inside.any():
        dev_end = np.full(n, np.iinfo(np.int64).min)
        np.maximum.at(dev_end, dev_step[inside], dev.end[inside])
        dev_first = np.full(n, np.iinfo(np.int64).max)
        np.minimum.at(dev_first, dev_step[inside], dev.ts[inside])
        prev_end = int(hs[0])
        if counts[0] > 0:
            # device work launched before the steps but still running pushes step 0's start
            early = ~inside & (dev.end <= dev_first[0])
            if early.any():
                prev_end = max(prev_end, int(dev.end[early].max()))
        for i in range(n):  # one iteration per step, not per event
            start = max(prev_end, int(hs[i]))
            end = max(int(he[i]), int(dev_end[i]))
            end = max(end, start)
            starts[i], ends[i] = start, end
            prev_end = end
    steps = [
        Step(labels[i], int(starts[i]), int(ends[i]), int(hs[i]), int(he[i]), int(counts[i]))
        for i in range(n)
    ]
    dropped: list[str] = []
    if n > 1 and len(dev) and counts.any():
        last = int(np.flatnonzero(counts)[-1])
        keep = last + 1
        if last >= 1 and counts[last] < TAIL_RATIO * counts[last - 1]:
            keep = last
        dropped = [s.name for s in steps[keep:]]
        steps = steps[:keep]
    return Steps(tuple(steps), tuple(dropped), True)


def select_step(steps: Steps, wanted: int) -> Steps:
    """Only step ``wanted`` (the N of ProfilerStep#N)."""
    for s in steps.steps:
        if s.name == str(wanted):
            return Steps((s,), (), steps.profiler_steps)
    available = ", ".join(s.name for s in steps.steps) or "none"
    raise UsageError(f"step {wanted} is not in the trace (steps: {available})")
