"""What bounds a monitored run: one of ``BOUNDS``, its evidence, a confidence, a next step.

The rules read shares of the steady window's wall time (``summary.shares``), never
absolute rates, so that the verdict does not depend on how fast or how loaded the machine
is: a CPU-bound thread on a crowded machine is still on a CPU or waiting for one
(``main_demand``), a process blocked on storage is still in disk sleep. The first rule
that holds decides; the thresholds and why are in docs/monitor.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stepscope.analysis.system.summary import Shares, shares
from stepscope.model.system import SystemSamples
from stepscope.units import format_bytes

BOUNDS = ("input", "cpu", "gpu", "memory-bandwidth", "communication", "io", "idle")

MIN_TICKS = 5  # fewer samples in the window: no verdict
FEW_TICKS = 20  # fewer: the confidence is low at best
GPU_BUSY = 80.0  # % of time a kernel ran (NVML utilisation)
DRAM_BUSY = 60.0  # % of peak DRAM bandwidth (GPM) or of time memory was busy (NVML)
WAIT_SHARE = 0.30  # data / collective wait, disk sleep: share of the window
CPU_DEMAND = 0.70  # main thread on a CPU or runnable
COMPUTE_SHARE = 0.50  # forward + backward + optimizer on a CPU-only run
IDLE_DEMAND = 0.30
ASLEEP = 0.50  # idle also needs the main thread asleep on an event (state S) this often
GPU_IDLE = 10.0
WORKER_SATURATED = 0.80  # per worker: on a CPU or runnable


@dataclass(frozen=True)
class Verdict:
    bound: str | None  # None: too few samples to say
    confidence: str  # high, medium, low
    evidence: dict[str, float]
    reason: str  # one sentence: the rule that decided, with its numbers
    next_step: str
    shares: Shares


def verdict(samples: SystemSamples) -> Verdict:
    s = shares(samples)
    ev = _evidence(s)
    if s.ticks < MIN_TICKS:
        return Verdict(None, "low", ev, f"only {s.ticks} samples in the steady window "
                       f"(at least {MIN_TICKS} are needed): run longer or raise --hz",
                       "monitor a longer run", s)
    decided = _decide(s, samples.n_cores)
    bound, value, threshold, reason, step = decided
    confidence = _confidence(value, threshold)
    if s.ticks < FEW_TICKS:
        confidence = "low"
    return Verdict(bound, confidence, ev, reason, step, s)


def _decide(s: Shares, n_cores: int) -> tuple[str, float, float, str, str]:
    """(bound, deciding value, its threshold (value > threshold direction), reason, step)."""
    phases = s.phases
    gpu_util = max((u for u in s.gpu_util if not math.isnan(u)), default=math.nan)
    has_gpu = not math.isnan(gpu_util)
    if has_gpu and gpu_util >= GPU_BUSY:
        dram = max((u for u in s.gpu_dram_bw if not math.isnan(u)), default=math.nan)
        mem, source = (dram, "of peak DRAM bandwidth (GPM)") if not math.isnan(dram) else (
            max((u for u in s.gpu_mem_util if not math.isnan(u)), default=math.nan),
            "of the time device memory was read or written (NVML)")
        if not math.isnan(mem) and mem >= DRAM_BUSY:
            return ("memory-bandwidth", mem, DRAM_BUSY,
                    f"a kernel ran {gpu_util:.0f}% of the time and memory was busy "
                    f"{mem:.0f}% {source}",
                    "trace with nsys and --gpu-metrics-devices=all (DRAM bandwidth over "
                    "time), then ncu on the top kernels; fuse element-wise kernels or use "
                    "lower precision to move fewer bytes")
        return ("gpu", gpu_util, GPU_BUSY,
                f"a kernel ran {gpu_util:.0f}% of the time on the busiest GPU",
                "trace with `stepscope run` to see which kernels take the time; for SM "
                "activity over time, nsys profile --gpu-metrics-devices=all")
    collective = phases.get("collective", 0.0)
    if collective >= WAIT_SHARE:
        return ("communication", collective, WAIT_SHARE,
                f"the main process waited in blocking torch.distributed calls "
                f"{_pct(collective)} of the time",
                "trace every rank with `stepscope run` and `stepscope report` the folder: "
                "the distributed view shows stragglers and exposed communication")
    data = phases.get("data", 0.0)
    if data >= WAIT_SHARE:
        return _input(s, data, n_cores)
    if s.main_io >= WAIT_SHARE:
        return _io(s, s.main_io, "the main process")
    compute = phases.get("forward", 0.0) + phases.get("backward", 0.0) + phases.get(
        "optimizer", 0.0)
    # CUDA spins on a CPU while it waits for the GPU (cudaDeviceScheduleAuto spins when
    # there are more cores than contexts): time in synchronising calls is GPU time
    demand = max(0.0, s.main_demand - phases.get("sync", 0.0))
    if demand >= CPU_DEMAND or (not has_gpu and compute >= COMPUTE_SHARE):
        value = max(demand, compute if not has_gpu else 0.0)
        threshold = CPU_DEMAND if demand >= CPU_DEMAND else COMPUTE_SHARE
        what = (f"the main thread was on a CPU or waiting for one {_pct(demand)} "
                f"of the time" + (" outside synchronising calls" if phases.get("sync")
                                  else ""))
        if phases:
            what += f" (forward + backward + optimizer: {_pct(compute)})"
        step = ("trace with `stepscope run` to see which operators or Python code take "
                "the host's time")
        if has_gpu:
            step = (f"the GPU is busy only {gpu_util:.0f}% of the time because the host "
                    "cannot feed it: " + step + " (launch overhead, host-side ops)")
        return "cpu", value, threshold, what, step
    if (s.main_demand < IDLE_DEMAND and s.main_sleep >= ASLEEP
            and (not has_gpu or gpu_util < GPU_IDLE)):
        return ("idle", 1.0 - s.main_demand, 1.0 - IDLE_DEMAND,
                f"the main thread was on a CPU or waiting for one only "
                f"{_pct(s.main_demand)} of the time, asleep {_pct(s.main_sleep)}, blocked "
                f"on storage {_pct(s.main_io)}"
                + (f", GPU busy {gpu_util:.0f}%" if has_gpu else ""),
                "it sleeps or waits on something that is neither a CPU, the disk nor a "
                "GPU (time.sleep, a lock, the network, a child process): "
                "`py-spy dump --pid PID` shows where it waits")
    # Nothing crossed its threshold: the largest share, with low confidence.
    candidates = [("cpu", demand), ("io", s.main_io), ("input", data)]
    if has_gpu:
        candidates.append(("gpu", gpu_util / 100))
    bound, value = max(candidates, key=lambda c: c[1])
    return (bound, 0.0, 1.0,
            f"no share crossed its threshold; the largest is {bound} ({_pct(value)})",
            "trace with `stepscope run` to see the step in detail")


def _input(s: Shares, data: float, n_cores: int) -> tuple[str, float, float, str, str]:
    waited = f"the main process waited for batches {_pct(data)} of the time"
    if s.workers == 0:
        if s.main_io >= WAIT_SHARE:
            return _io(s, s.main_io, "the main process (loading with num_workers=0)")
        return ("input", data, WAIT_SHARE, waited + " and loads them itself (num_workers=0)",
                "look at the DataLoader: it runs in the main process (num_workers=0); give "
                f"it workers (num_workers up to the {n_cores} cores), then trace with "
                "`stepscope run`")
    if s.worker_io >= WAIT_SHARE:
        return _io(s, s.worker_io, f"the {s.workers} DataLoader workers")
    if s.worker_demand >= WORKER_SATURATED:
        return ("input", data, WAIT_SHARE,
                waited + f"; its {s.workers} workers were each on a CPU or waiting for one "
                f"{_pct(s.worker_demand)} of the time",
                _saturated_next(s, n_cores))
    return ("input", data, WAIT_SHARE,
            waited + f"; its {s.workers} workers were busy only {_pct(s.worker_demand)}",
            "look at the DataLoader: the workers are not the limit; suspect passing large "
            "batches between processes, a collate_fn or sampler in the main process, or "
            "prefetch_factor; `stepscope run` shows the main process's side")


def _saturated_next(s: Shares, n_cores: int) -> str:
    """Workers that want a CPU but mostly wait for one (they run under half their demand)
    are starved by the rest of the host: more workers cannot help; cheaper samples or
    freed cores can."""
    head = f"look at the DataLoader: {s.workers} workers saturated"
    if s.worker_cpu < 50.0 * s.worker_demand:
        return (f"{head}, but waiting for a CPU: each wants one {_pct(s.worker_demand)} of "
                f"the time and runs only {s.worker_cpu:.0f}% of a core, the host's "
                f"{n_cores} cores being {s.host_cpu:.0f}% busy: free cores (other processes "
                "compete for them) or make the per-sample transform cheaper")
    return (f"{head} (each runs {s.worker_cpu:.0f}% of a core; host CPU "
            f"{s.host_cpu:.0f}% of {n_cores} cores): make the per-sample transform cheaper, "
            "or add workers if cores are free")


def _io(s: Shares, value: float, who: str) -> tuple[str, float, float, str, str]:
    return ("io", value, WAIT_SHARE,
            f"{who} spent {_pct(value)} of the time blocked on storage (reading "
            f"{format_bytes(s.tree_read)}/s from storage, iowait {s.iowait:.0f}% of host CPU)",
            "the program waits on storage: a local or faster copy of the data, larger "
            "sequential reads, or more DataLoader workers to overlap the reads; "
            "`py-spy dump --pid PID` shows which reads")


def _confidence(value: float, threshold: float) -> str:
    """high: the deciding share is at least half-way from its threshold to certain (1 or
    100 %); medium: it crossed the threshold; low: no rule decided."""
    if value <= 0.0 and threshold >= 1.0:
        return "low"
    top = 100.0 if threshold > 1.0 else 1.0
    return "high" if value >= (threshold + top) / 2 else "medium"


def _pct(share: float) -> str:
    return f"{100 * share:.0f}%"


def _evidence(s: Shares) -> dict[str, float]:
    ev: dict[str, float] = {
        "window_s": s.window.seconds, "samples_in_window": float(s.ticks),
        "main_oncpu": s.main_oncpu, "main_runqueue": s.main_runqueue,
        "main_demand": s.main_demand, "main_io": s.main_io, "main_sleep": s.main_sleep,
        "host_cpu_pct": s.host_cpu, "iowait_pct": s.iowait, "read_bytes_per_s": s.tree_read,
    }
    for phase, share in s.phases.items():
        ev[f"{phase}_share"] = share
    if s.phases:
        ev["steps"] = float(s.steps)
        ev["batches"] = float(s.batches)
        ev["steps_per_s"] = s.steps_per_s
        ev["samples_per_s"] = s.samples_per_s
    ev["workers"] = float(s.workers)
    if s.workers:
        ev["worker_demand"] = s.worker_demand
        ev["worker_cpu_pct"] = s.worker_cpu
        ev["worker_io"] = s.worker_io
    for g, util in enumerate(s.gpu_util):
        ev[f"gpu{g}_util_pct"] = util
    for g, mem in enumerate(s.gpu_mem_util):
        ev[f"gpu{g}_mem_util_pct"] = mem
    for g, dram in enumerate(s.gpu_dram_bw):
        if not math.isnan(dram):
            ev[f"gpu{g}_dram_bw_pct"] = dram
    for g, sm in enumerate(s.gpu_sm_active):
        if not math.isnan(sm):
            ev[f"gpu{g}_sm_active_pct"] = sm
    return {k: v for k, v in ev.items() if not math.isnan(v)}
