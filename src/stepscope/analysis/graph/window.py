"""Windows: the steps of a trace, or ``--window NAME[#N]``: the N-th occurrence (0-based,
in start order) of the host ranges whose name contains NAME, as HTA numbers instances."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.events.steps import Steps
from stepscope.errors import UsageError
from stepscope.model.trace import HOST_PYTHON, Trace

_SPEC = re.compile(r"^(?P<name>.+?)(?:#(?P<n>\d+))?$")


@dataclass(frozen=True)
class Window:
    label: str
    start: int  # ns
    end: int


def parse(spec: str) -> tuple[str, int]:
    """``NAME[#N]`` -> (NAME, N); a name that itself ends in ``#digits`` (ProfilerStep#3)
    is matched whole when no instance of that prefix exists (see :func:`find`)."""
    m = _SPEC.match(spec.strip())
    if not m or not m.group("name"):
        raise UsageError(f"--window {spec!r}: expected NAME or NAME#N (N counts from 0)")
    return m.group("name"), int(m.group("n") or 0)


def find(trace: Trace, spec: str) -> Window:
    name, n = parse(spec)
    host = trace.host
    candidates = [(name, n)]
    if "#" in spec:  # "ProfilerStep#5" may mean the range named so: try it whole as well
        candidates.append((spec.strip(), 0))
    for want, k in candidates:
        match = trace.string_ids(_Contains(want))[host.name] & (host.kind != HOST_PYTHON)
        idx = np.flatnonzero(match)
        if len(idx) > k:
            i = int(idx[k])
            return Window(f"{trace.name(int(host.name[i]))}", int(host.ts[i]),
                          int(host.end[i]))
    found = int(np.count_nonzero(trace.string_ids(_Contains(name))[host.name]))
    raise UsageError(f"{trace.meta.path}: --window {spec!r}: {found} host ranges contain "
                     f"{name!r}, instance {n} does not exist")


class _Contains:
    """A hashable predicate (string_ids memoises per predicate)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __call__(self, s: str) -> bool:
        return self.text in s

    def __hash__(self) -> int:
        return hash(("contains", self.text))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Contains) and other.text == self.text


def step_windows(steps: Steps, *, device_end: bool = False) -> list[Window]:
    """One window per step: its host range (ProfilerStep#N, HTA's window), from the later
    start warm-up exclusion may give it. ``device_end``: to the step's end instead, which
    covers the device work it launched and the host calls made meanwhile (a final
    synchronize): the replay's windows (docs/metrics.md, Steps)."""
    return [Window(f"ProfilerStep#{s.name}" if steps.profiler_steps else "trace",
                   max(s.host_start, min(s.start, s.host_end)),
                   max(s.end, s.host_end) if device_end else s.host_end)
            for s in steps.steps]
