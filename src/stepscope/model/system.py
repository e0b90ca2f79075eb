"""A monitored run: the sampler's rows, column by column (``stepscope monitor``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SystemSamples:
    """One row per sampler tick. ``columns`` holds the scalar series (floats, and
    ``main_state`` strings) and the list series (``cores``: per-core busy %; ``gpu_*``:
    one value per GPU, NaN where NVML does not report it). Meanings in docs/monitor.md."""

    columns: dict[str, list[Any]]
    hz: float
    n_cores: int
    gpu_names: list[str] = field(default_factory=list)
    phases: bool = False  # the program's hooks reported phases
    command: str = ""
    sampler_cpu_s: float = 0.0
    duration_s: float = 0.0

    def series(self, name: str) -> list[Any]:
        return self.columns.get(name, [])

    @property
    def n(self) -> int:
        return len(self.columns.get("t", []))
