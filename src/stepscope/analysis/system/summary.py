"""The steady window of a monitored run and the shares the verdict reads.

The window: from the first tick at which the program's hooks had counted a batch or an
optimizer step to the last tick at which that count still grew (start-up such as
``import torch`` and the end are left out); when no step was counted, the whole run
from the first tick at which the program's own code was running.
Every share is of the window's wall time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from stepscope.model.system import SystemSamples

PHASES = ("data", "forward", "backward", "optimizer", "sync", "collective")  # shares
# per-tick series summarised in the JSON (name -> unit)
METRICS = {
    "cpu": "%", "iowait": "%", "disk_read": "B/s", "disk_write": "B/s",
    "net_recv": "B/s", "net_sent": "B/s", "major_faults": "1/s",
    "main_cpu": "%", "main_rss": "B", "workers_cpu": "%", "workers_rss": "B",
    "others_cpu": "%", "others_rss": "B", "tree_read": "B/s", "tree_write": "B/s",
}


@dataclass(frozen=True)
class Window:
    start: int  # tick indices, end exclusive
    end: int
    seconds: float
    from_steps: bool


@dataclass(frozen=True)
class Shares:
    """What the main process and its workers did during the window."""

    window: Window
    ticks: int
    main_oncpu: float  # main thread on a CPU
    main_runqueue: float  # runnable, waiting for a CPU
    main_io: float  # blocked on storage (docs/monitor.md: disk sleep, or the rest)
    main_sleep: float  # share of ticks asleep on an event (state S)
    phases: dict[str, float]  # phase -> share (only when the hooks ran)
    steps: int
    batches: int
    samples_per_s: float
    steps_per_s: float
    workers: int  # most DataLoader workers seen at once
    worker_demand: float  # per worker: on a CPU or waiting for one
    worker_cpu: float  # per worker, % of one core
    worker_io: float  # per worker, share of ticks in disk sleep
    host_cpu: float  # % of all cores
    iowait: float  # % of host CPU time
    tree_read: float  # B/s read from storage by the program's processes
    gpu_util: list[float] = field(default_factory=list)  # per GPU, mean %
    gpu_mem_util: list[float] = field(default_factory=list)
    gpu_dram_bw: list[float] = field(default_factory=list)  # GPM, NaN without it
    gpu_sm_active: list[float] = field(default_factory=list)

    @property
    def main_demand(self) -> float:
        return self.main_oncpu + self.main_runqueue


def window(samples: SystemSamples) -> Window:
    t = [float(x) for x in samples.series("t")]
    if not t:
        return Window(0, 0, 0.0, False)
    progress = _progress(samples)
    grew = [i for i in range(1, len(progress)) if progress[i] > progress[i - 1]]
    if progress and len(grew) >= 2:
        # from the tick that saw the first step to the last tick that saw one
        start, end = grew[0] + 1, grew[-1] + 1
        return Window(start, end, t[end - 1] - t[start - 1], True)
    # the whole run after the first tick that saw the program's own code run: that tick's
    # interval still holds the interpreter's start-up (a tick reads the counters' change
    # since the one before, and on a loaded machine a late tick's interval is long), so
    # the window starts with the next one; t counts from the sampler's first reading
    running = samples.series("phase_running")
    first = next((i for i, x in enumerate(running) if x), None)
    if first is None:
        return Window(0, len(t), t[-1], False)
    return Window(first + 1, len(t), t[-1] - t[first], False)


def _progress(samples: SystemSamples) -> list[float]:
    steps = samples.series("phase_steps")
    batches = samples.series("phase_batches")
    if not steps and not batches:
        return []
    if steps and steps[-1] > 0:
        return [float(x) for x in steps]
    return [float(x) for x in batches]


def shares(samples: SystemSamples) -> Shares:
    win = window(samples)
    lo, hi = win.start, win.end
    span = max(win.seconds, 1e-9)
    t = [float(x) for x in samples.series("t")]

    def cut(name: str) -> list[Any]:
        return samples.series(name)[lo:hi]

    def integral(name: str) -> float:
        """Sum of rate x tick length over the window (the rate is per tick)."""
        values = samples.series(name)
        total = 0.0
        for i in range(lo, min(hi, len(values))):
            value = float(values[i])
            if not math.isnan(value):
                total += value * (t[i] - (t[i - 1] if i else 0.0))
        return total

    def delta(name: str) -> float:
        values = samples.series(name)
        if not values or hi <= lo:
            return 0.0
        before = float(values[lo - 1]) if lo > 0 else 0.0
        return float(values[hi - 1]) - before

    states = cut("main_state")
    disk_sleep = _mean([s == "disk-sleep" for s in states])
    asleep = _mean([s in ("sleeping", "idle") for s in states])
    oncpu, runqueue = integral("main_oncpu") / span, integral("main_runqueue") / span
    moved = _mean(cut("tree_read")) + _mean(cut("tree_write"))
    # Off a CPU, out of the run queue and not asleep on an event: blocked in the kernel.
    # Sampled D states undercount it when each read lasts a fraction of the tick and the
    # state flips D -> R -> D between samples; we saw a process reading 1 GB/s with
    # O_DIRECT sampled 'R' 85 % of the time while on a CPU 16 % and queued 1 %.
    blocked = max(0.0, 1.0 - oncpu - runqueue - asleep) if moved > 0 else 0.0
    main_io = max(disk_sleep, blocked)
    phase = {p: delta(f"phase_{p}") / span for p in PHASES} if samples.phases else {}
    counts = [float(x) for x in cut("workers_count")]
    busy_ticks = [i for i, c in enumerate(counts) if c > 0]

    def per_worker_tick(name: str) -> list[float]:
        values = cut(name)  # sliced once, not once per tick
        return [float(values[i]) / counts[i] for i in busy_ticks]

    per_worker = per_worker_tick("workers_demand")
    worker_cpu = per_worker_tick("workers_cpu")
    worker_io = per_worker_tick("workers_io")
    steps, batches = delta("phase_steps"), delta("phase_batches")
    return Shares(
        window=win, ticks=hi - lo,
        main_oncpu=oncpu, main_runqueue=runqueue, main_io=main_io, main_sleep=asleep,
        phases=phase, steps=int(steps), batches=int(batches),
        samples_per_s=delta("phase_samples") / span, steps_per_s=(steps or batches) / span,
        workers=int(max(counts, default=0)), worker_demand=_mean(per_worker),
        worker_cpu=_mean(worker_cpu), worker_io=_mean(worker_io),
        host_cpu=_mean(cut("cpu")), iowait=_mean(cut("iowait")),
        tree_read=_mean(cut("tree_read")),
        gpu_util=_per_gpu(cut("gpu_util")), gpu_mem_util=_per_gpu(cut("gpu_mem_util")),
        gpu_dram_bw=_per_gpu(cut("gpu_dram_bw")), gpu_sm_active=_per_gpu(cut("gpu_sm_active")),
    )


def _mean(values: list[Any]) -> float:
    numbers = [float(v) for v in values if not math.isnan(float(v))]
    return sum(numbers) / len(numbers) if numbers else 0.0


def _per_gpu(rows: list[list[float]]) -> list[float]:
    if not rows or not rows[0]:
        return []
    out = []
    for g in range(len(rows[0])):
        numbers = _gpu_values(rows, g)
        out.append(sum(numbers) / len(numbers) if numbers else math.nan)
    return out


def _gpu_values(rows: list[list[Any]], g: int) -> list[float]:
    """GPU ``g``'s readings in per-tick rows (one value per GPU), NaN left out."""
    return [float(r[g]) for r in rows if g < len(r) and not math.isnan(float(r[g]))]


@dataclass(frozen=True)
class MetricSummary:
    unit: str
    mean: float
    p50: float
    p95: float
    max: float


def metric_summaries(samples: SystemSamples) -> dict[str, MetricSummary]:
    """Per-metric mean, median, p95 and max over the whole run (not the window)."""
    out: dict[str, MetricSummary] = {}
    for name, unit in METRICS.items():
        values = [float(v) for v in samples.series(name) if not math.isnan(float(v))]
        if values:
            out[name] = _summary(values, unit)
    for name in ("util", "mem_util", "mem_used", "power", "sm_clock", "pcie_rx", "pcie_tx",
                 "nvlink_rx", "nvlink_tx", "sm_active", "sm_occupancy", "tensor_active",
                 "dram_bw"):
        rows = samples.series(f"gpu_{name}")
        for g in range(len(rows[0]) if rows else 0):
            values = _gpu_values(rows, g)
            if values:
                out[f"gpu{g}_{name}"] = _summary(values, _GPU_UNITS.get(name, "%"))
    return out


def _summary(values: list[float], unit: str) -> MetricSummary:
    values = sorted(values)
    return MetricSummary(unit, sum(values) / len(values), _percentile(values, 50),
                         _percentile(values, 95), values[-1])


_GPU_UNITS = {"mem_used": "B", "power": "W", "sm_clock": "MHz", "pcie_rx": "B/s",
              "pcie_tx": "B/s", "nvlink_rx": "B/s", "nvlink_tx": "B/s"}


def _percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile of sorted ``values``, linear between ranks (NumPy's default)."""
    k = (len(values) - 1) * q / 100
    f = math.floor(k)
    c = min(f + 1, len(values) - 1)
    return values[f] + (values[c] - values[f]) * (k - f)
