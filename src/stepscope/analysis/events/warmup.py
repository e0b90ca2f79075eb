"""Warm-up: a long stall at the start of the profiled window, kept out of steady state.

The first CUDA/HIP call creates the context, the first launch of a module loads it
lazily (CUDA_MODULE_LOADING=LAZY), cuDNN benchmark mode times every algorithm on the
first convolution, torch.compile compiles on the first call. Profiled, each shows as one
runtime call of hundreds of milliseconds while the GPU does nothing, and every
per-step figure then says "runtime 74 %".

Rule (docs/metrics.md "Warm-up"): a runtime call is a warm-up stall when it lasts at least
WARMUP_MIN_NS, the device is idle for at least IDLE_FRACTION of it (a long
cudaDeviceSynchronize waiting for busy kernels is not a stall), and it starts in the first
step (traces with ProfilerStep) or in the first half of the window (traces without). The
warm-up is [window start, end of the last stall]. Steady-state figures (step breakdown,
GPU metrics, advice) exclude it: the step that holds it is dropped when other steps remain,
else the step starts where the warm-up ends.

A blocking call (a synchronising call or a synchronous copy: names.SYNC_CALLS) that begins
while device work launched before it is still queued or running is not warm-up, however
idle the device looks during it: it waits for that work (a stream it depends on through
cudaStreamWaitEvent/hipStreamWaitEvent, a kernel that cannot start, a peer rank), which
is a host-device synchronisation and stays in steady state for the host-sync finding.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links, gather
from stepscope.analysis.events.steps import Steps
from stepscope.classify import names
from stepscope.model.trace import DEV_KERNEL, Trace

WARMUP_MIN_NS = 100_000_000  # 100 ms
IDLE_FRACTION = 0.9
DOMINANT_PCT = 25.0  # warm-up above this share of the window: advise profiling after it


@dataclass(frozen=True)
class Warmup:
    start: int  # ns (the window start)
    end: int  # ns (end of the last stall)
    stall_ns: int  # Σ durations of the stall calls
    calls: tuple[str, ...]  # names of the stall calls, longest first
    window_ns: int  # the profiled window before the warm-up was removed
    dropped_steps: tuple[str, ...]  # steps removed from steady state

    @property
    def duration(self) -> int:
        return self.end - self.start

    @property
    def pct_of_window(self) -> float:
        return 100.0 * self.duration / self.window_ns if self.window_ns > 0 else 0.0


def waits_on_queued_work(trace: Trace, calls: npt.NDArray[np.int64],
                         links: Links | None = None) -> npt.NDArray[np.bool_]:
    """For runtime calls ``calls``: blocking calls (names.SYNC_CALLS) that begin while a
    device op launched by an earlier call (launch call ended at or before this call began)
    has not finished yet."""
    rt, dev = trace.runtime, trace.device
    out = np.zeros(len(calls), dtype=bool)
    blocking = names.mask_in(trace, names.SYNC_CALLS)[rt.name[calls]]
    if not blocking.any() or not len(dev):
        return out
    launch = (links or Links(trace)).device_runtime
    linked = launch >= 0
    launched_at = rt.end[launch[linked]]  # when the device op was queued
    dev_end = dev.end[linked]
    order = np.argsort(launched_at, kind="stable")
    launched_at, dev_end = launched_at[order], dev_end[order]
    # latest end among device ops queued by time t: prefix maximum over launch order
    run_max = np.maximum.accumulate(dev_end) if len(dev_end) else dev_end
    j = np.flatnonzero(blocking)
    start = rt.ts[calls[j]]
    k = np.searchsorted(launched_at, start, side="right")  # device ops queued by then
    out[j] = (k > 0) & (gather(run_max, k - 1, 0) > start)
    return out


def find_warmup(trace: Trace, steps: Steps, links: Links | None = None) -> Warmup | None:
    rt = trace.runtime
    if not len(rt) or not steps.steps:
        return None
    lo, hi = steps.window
    first = steps.steps[0]
    limit = first.host_end if steps.profiler_steps else lo + (hi - lo) // 2
    cand = np.flatnonzero((rt.dur >= WARMUP_MIN_NS) & (rt.ts >= lo) & (rt.ts <= limit))
    if len(cand) == 0:
        return None
    dev = trace.device
    busy = iv.union(dev.ts, dev.end)
    busy_in = iv.measure_in(busy, rt.ts[cand], rt.end[cand])
    stall = cand[busy_in <= (1.0 - IDLE_FRACTION) * rt.dur[cand]]
    stall = stall[~waits_on_queued_work(trace, stall, links)]
    if len(stall) == 0:
        return None
    end = int(rt.end[stall].max())
    order = stall[np.argsort(-rt.dur[stall], kind="stable")]
    calls = tuple(dict.fromkeys(trace.name(int(rt.name[i])) for i in order))
    dropped = tuple(s.name for s in steps.steps if s.start < end) if len(steps.steps) > 1 else ()
    return Warmup(start=lo, end=min(end, hi), stall_ns=int(rt.dur[stall].sum()), calls=calls,
                  window_ns=hi - lo, dropped_steps=dropped)


def exclude_warmup(steps: Steps, warm: Warmup) -> Steps:
    """Steady-state steps: without the steps the warm-up touches, or trimmed when it is all."""
    kept = tuple(s for s in steps.steps if s.name not in warm.dropped_steps)
    if warm.dropped_steps and kept:
        return dataclasses.replace(steps, steps=kept)
    first = steps.steps[0]
    start = min(max(first.start, warm.end), first.end)
    return dataclasses.replace(steps, steps=(dataclasses.replace(first, start=start),))


# A first call: the earliest call of an operator with given input shapes (its name when no
# shapes are recorded) that takes FIRST_CALL_RATIO times the median of its later calls.
# cuDNN's algorithm search (heuristics, benchmark mode), lazy module loading and
# compilation happen on the first call of an operator for a shape, and later calls run in
# microseconds to milliseconds: a first call ten times slower is that warm-up pattern,
# read from the trace itself. It is not steady-state host work.
FIRST_CALL_RATIO = 10.0
# The shortest first call or first launch counted as warm-up: 1 ms, the shortest GPU gap
# the advice looks at (gpu-gaps). Shorter first calls are within a step's normal jitter.
FIRST_CALL_MIN_NS = 1_000_000


def first_calls(trace: Trace, ops: npt.NDArray[np.int64], min_ns: int,
                waits: iv.Union = iv.EMPTY) -> npt.NDArray[np.int64]:
    """The host rows among ``ops`` that are first calls (FIRST_CALL_RATIO) of at least
    ``min_ns``: the first-call form of warm-up, judged per operator and shape. Every call is
    judged on its time outside ``waits`` (the synchronising calls): a first ``aten::to``
    slow because its copy waited 6.6 ms for the device in cudaStreamSynchronize is a
    host-device synchronisation, not warm-up."""
    host = trace.host
    if len(ops) < 2:
        return np.empty(0, dtype=np.int64)
    # Only an (operator, shapes) group with a call of min_ns or more can have a first call
    # that long (time outside the waits is at most the call's duration): the others are
    # left out before sorting, which leaves the result as it was and sorts a few calls
    # instead of every operator of the trace.
    # (name, shapes) as one int64 that sorts as the pair does (shape ids from -1 to 2^31)
    key = host.name[ops].astype(np.int64) * (1 << 32) + host.input_dims[ops].astype(np.int64)
    long_keys = np.unique(key[host.dur[ops] >= min_ns])
    at = np.minimum(np.searchsorted(long_keys, key), max(len(long_keys) - 1, 0))
    keep = long_keys[at] == key if len(long_keys) else np.zeros(len(ops), dtype=bool)
    ops, key = ops[keep], key[keep]
    if len(ops) < 2:
        return np.empty(0, dtype=np.int64)
    order = np.lexsort((host.ts[ops], key))
    ops, key = ops[order], key[order]
    new = np.r_[True, key[1:] != key[:-1]]
    group = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    counts = np.bincount(group)
    dur = (host.dur[ops] - iv.measure_in(waits, host.ts[ops], host.end[ops])).astype(
        np.float64)
    firsts: list[int] = []
    for g in np.flatnonzero((counts >= 2) & (dur[first] >= min_ns)).tolist():
        i = int(first[g])
        later = dur[i + 1:i + int(counts[g])]
        if dur[i] >= FIRST_CALL_RATIO * float(np.median(later)):
            firsts.append(int(ops[i]))
    return np.sort(np.asarray(firsts, dtype=np.int64))


# A first launch: the earliest launch call of a kernel (by name) that takes at least
# ``min_ns`` and FIRST_CALL_RATIO times the median of that kernel's later launches (or is
# its only launch). CUDA loads a module lazily, when one of its kernels is first launched
# (CUDA_MODULE_LOADING=LAZY: the default since CUDA 12.2, and PyTorch sets it when unset),
# and the launch call returns only after the load: one launch of milliseconds while the GPU
# idles, the kernel's later launches taking microseconds. A JIT-compiled kernel (nvFuser,
# Triton) is loaded the same way on its first launch. A launch call also blocks when the
# launch queue is full, until a queued kernel finishes: the device is then busy throughout
# the call, so a call during which the devices are busy half the time or more
# (QUEUE_BUSY_FRACTION) is not taken for a module load.
QUEUE_BUSY_FRACTION = 0.5


def first_launches(trace: Trace, links: Links, min_ns: int) -> npt.NDArray[np.int64]:
    """The runtime rows of the launch calls that are first launches (see above) of at least
    ``min_ns``."""
    rt, dev = trace.runtime, trace.device
    issuer = links.device_runtime
    ops = np.flatnonzero((issuer >= 0) & (dev.kind == DEV_KERNEL))  # copies load no module
    if not len(ops):
        return np.empty(0, dtype=np.int64)
    calls, kernel = issuer[ops], dev.name[ops]
    order = np.lexsort((rt.ts[calls], kernel))
    calls, kernel = calls[order], kernel[order]
    new = np.r_[True, kernel[1:] != kernel[:-1]]
    first = np.flatnonzero(new)
    counts = np.bincount(np.cumsum(new) - 1)
    dur = rt.dur[calls].astype(np.float64)
    firsts: list[int] = []
    for g in np.flatnonzero(dur[first] >= min_ns).tolist():
        i = int(first[g])
        later = dur[i + 1:i + int(counts[g])]
        if not len(later) or dur[i] >= FIRST_CALL_RATIO * float(np.median(later)):
            firsts.append(int(calls[i]))
    sel = np.unique(np.asarray(firsts, dtype=np.int64))
    busy = iv.measure_in(iv.union(dev.ts, dev.end), rt.ts[sel], rt.end[sel])
    out: npt.NDArray[np.int64] = sel[busy < QUEUE_BUSY_FRACTION * rt.dur[sel]]
    return out
