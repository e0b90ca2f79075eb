"""``ThroughputMeter``: samples per second per window, per epoch and overall.

A step's time is the wall time from the previous ``step()`` (or ``start()``) to this one.
Nothing here synchronises with the GPU unless ``sync=True``: without it the host clock
measures how fast work is enqueued, which over a window of steps converges to the real
rate because the host blocks once the device queue is full.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TextIO

from stepscope.errors import UsageError

Clock = Callable[[], float]


@dataclass(frozen=True)
class ThroughputStats:
    steps: int
    samples: float
    seconds: float
    first_step: int  # 1-based index of the first counted step (warm-up steps included)

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0


class _Accumulator:
    __slots__ = ("first_step", "samples", "seconds", "steps")

    def __init__(self) -> None:
        self.steps = 0
        self.samples = 0.0
        self.seconds = 0.0
        self.first_step = 0

    def add(self, step_index: int, samples: float, seconds: float) -> None:
        if self.steps == 0:
            self.first_step = step_index
        self.steps += 1
        self.samples += samples
        self.seconds += seconds

    def freeze(self) -> ThroughputStats:
        return ThroughputStats(self.steps, self.samples, self.seconds, self.first_step)


class ThroughputMeter:
    """Call ``step(n)`` once per iteration after the work of that iteration was issued.

    The first ``warmup`` steps are not counted, nor is a step whose start is unknown
    (the first one without a preceding ``start()``, or the first after ``epoch_end()``):
    call ``start()`` just before the loop to count its first batch. ``window`` steps make
    one window; ``epoch_end()`` closes an epoch. ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        batch_size: int | None = None,
        *,
        warmup: int = 1,
        window: int = 10,
        sync: bool = False,
        unit: str = "samples",
        label: str = "profiled window",
        verbose: bool = False,
        clock: Clock = time.perf_counter,
    ) -> None:
        if warmup < 0 or window < 1:
            raise UsageError("ThroughputMeter: warmup must be >= 0 and window >= 1")
        self.batch_size = batch_size
        self.warmup = warmup
        self.window = window
        self.unit = unit
        self.label = label
        self.verbose = verbose
        self._clock = clock
        self._sync = _cuda_synchronize() if sync else None
        self._mark: float | None = None
        self._calls = 0
        self._total = _Accumulator()
        self._epoch = _Accumulator()
        self._window = _Accumulator()
        self.windows: list[ThroughputStats] = []
        self.epochs: list[ThroughputStats] = []

    def _now(self) -> float:
        if self._sync is not None:
            self._sync()
        return self._clock()

    def start(self) -> None:
        """Start timing the next step now (before the loop, after validation...)."""
        self._mark = self._now()

    def step(self, samples: float | None = None) -> None:
        """One iteration done; ``samples`` defaults to the meter's ``batch_size``."""
        now = self._now()
        n = self.batch_size if samples is None else samples
        if n is None:
            raise UsageError("ThroughputMeter.step: give the number of samples or a batch_size")
        self._calls += 1
        mark, self._mark = self._mark, now
        if mark is None or self._calls <= self.warmup:
            return
        seconds = now - mark
        self._total.add(self._calls, n, seconds)
        self._epoch.add(self._calls, n, seconds)
        self._window.add(self._calls, n, seconds)
        if self._window.steps == self.window:
            stats = self._window.freeze()
            self.windows.append(stats)
            self._window = _Accumulator()
            if self.verbose:
                last = stats.first_step + stats.steps - 1
                print(self.format(stats, f"window {len(self.windows)}, steps "
                                         f"{stats.first_step}-{last}"), flush=True)

    def epoch_end(self) -> ThroughputStats:
        """Close the current epoch and return its numbers; the next step starts untimed."""
        stats = self._epoch.freeze()
        self.epochs.append(stats)
        self._epoch = _Accumulator()
        self._mark = None
        if self.verbose:
            print(self.format(stats, f"epoch {len(self.epochs)}"), flush=True)
        return stats

    @property
    def total(self) -> ThroughputStats:
        """Every counted step so far."""
        return self._total.freeze()

    @property
    def samples_per_s(self) -> float:
        return self._total.freeze().samples_per_s

    def format(self, stats: ThroughputStats | None = None, label: str | None = None) -> str:
        stats = self.total if stats is None else stats
        if stats.steps == 0:
            return f"[Throughput during {label or self.label}] no steps counted yet"
        rate = format_rate(stats.samples_per_s)
        return f"[Throughput during {label or self.label}] ~{rate} {self.unit}/sec"

    def report(self, file: TextIO | None = None) -> None:
        """Print ``[Throughput during <label>] ~4.9 samples/sec``."""
        print(self.format(), file=file or sys.stdout, flush=True)


def format_rate(value: float) -> str:
    if value >= 99.95:  # what would print as "100.0"
        return f"{value:,.0f}"
    if value >= 0.995:
        return f"{value:.1f}"
    return f"{value:.2g}"


def _cuda_synchronize() -> Callable[[], None] | None:
    """``torch.cuda.synchronize`` when there is a GPU to wait for, else nothing to do."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    sync: Callable[[], None] = torch.cuda.synchronize
    return sync
