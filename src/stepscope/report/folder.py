"""What a folder (or a list) of traces is: the ranks of one job, or captures of one process.

``stepscope report DIR``, ``stepscope diff DIR`` and the dashboard's runs all ask
:func:`folder_layout`, so they agree. The rule (docs/cli.md, "report DIR"):

1. Traces that carry ``distributedInfo`` with ``world_size`` > 1 are ranks of a job, and
   the rank says which process wrote each: one rank's traces are captures (spans) of that
   rank; distinct ranks, one trace each, are a run of ranks. A folder that mixes such
   traces with traces without a rank, several world sizes, or several captures of some
   ranks beside others is refused in one line.
2. Traces without it are told apart by the process that wrote them: the host pid in the
   trace's events, the worker name of torch.profiler's file name
   (``{worker}.{span}.pt.trace.json[.gz]``, ``worker`` defaulting to ``{hostname}_{pid}``,
   as ``tensorboard_trace_handler`` writes it and torch-tb-profiler reads it) and a rank in
   the name (``rank3``, ``worker_3``). Traces alike in all three are one process's spans.
   Distinct processes are ranks only when they were captured together (their wall-clock
   windows share an instant, as the ranks of a job profiling the same steps do); captured
   one after another they are repeated runs of one workload, kept apart as spans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import pairwise

from stepscope.errors import UsageError
from stepscope.formats.kinds import TB_NAME
from stepscope.model.run import rank_from_name
from stepscope.units import count

RANKS, SPANS = "ranks", "spans"


@dataclass(frozen=True)
class Capture:
    """One trace file and what says which process wrote it, and when."""

    path: str
    rank: int | None  # distributedInfo
    world_size: int | None
    pid: str | None  # the host pid as written in the trace
    start_ns: int  # the capture's wall-clock window
    end_ns: int

    @property
    def distributed(self) -> bool:
        return self.rank is not None and (self.world_size or 0) > 1


@dataclass(frozen=True)
class Layout:
    kind: str  # RANKS | SPANS
    process: str  # SPANS: who wrote them, in words ("rank 0 of 8", "worker0 (pid 25738)")
    processes: int  # distinct processes


def worker_of(path: str) -> str | None:
    """torch.profiler's worker name in a trace file's name; None for other names."""
    m = TB_NAME.match(path.rstrip("/").rsplit("/", 1)[-1])
    return m.group("worker") if m else None


def process_key(c: Capture) -> tuple[object, ...]:
    """Traces with equal keys were written by one process."""
    if c.distributed:
        return ("rank", c.rank)
    return ("process", worker_of(c.path), rank_from_name(c.path), c.pid)


def _who(c: Capture) -> str:
    if c.distributed:
        return f"rank {c.rank} of {c.world_size}"
    worker = worker_of(c.path)
    pid = f"pid {c.pid}" if c.pid is not None else "pid unknown"
    return f"{worker} ({pid})" if worker else pid


def _together(captures: Sequence[Capture]) -> bool:
    """The windows share an instant: captured at the same time."""
    return max(c.start_ns for c in captures) < min(c.end_ns for c in captures)


def _apart(captures: Sequence[Capture]) -> bool:
    """No two windows overlap: each captured at its own time."""
    spans = sorted((c.start_ns, c.end_ns) for c in captures)
    return all(a[1] <= b[0] for a, b in pairwise(spans))


def folder_layout(location: str, captures: Sequence[Capture]) -> Layout:
    """RANKS or SPANS for the traces of ``location``; a one-line UsageError when mixed."""
    if not captures:
        raise UsageError(f"{location}: no trace could be read")
    dist = [c.distributed for c in captures]
    if any(dist) and not all(dist):
        raise UsageError(f"{location}: mixes traces of a distributed job with "
                         "single-process ones")
    if all(dist) and len({c.world_size for c in captures}) != 1:
        raise UsageError(f"{location}: holds traces of jobs with different world sizes")
    groups: dict[tuple[object, ...], list[Capture]] = {}
    for c in captures:
        groups.setdefault(process_key(c), []).append(c)
    if len(groups) == 1:
        return Layout(SPANS, _who(captures[0]), 1)
    several = [g for g in groups.values() if len(g) > 1]
    if not several and (all(dist) or _together(captures)):
        return Layout(RANKS, "", len(groups))
    if not all(dist) and _apart(captures):
        return Layout(SPANS, f"{len(groups)} processes, captured one after another",
                      len(groups))
    if several:
        g = several[0]
        others = count(len(groups) - 1, "other process", "other processes")
        raise UsageError(f"{location}: holds {len(g)} captures of {_who(g[0])} beside "
                         f"traces of {others}; give one capture per rank (or one process's "
                         "captures)")
    raise UsageError(f"{location}: traces of {len(groups)} processes without distributedInfo "
                     "whose capture windows partly overlap: neither one run of ranks nor "
                     "captures taken one after another")
