"""``stepscope.profile``: a ready ``torch.profiler.profile`` that writes where we read.

Defaults are the ones worth having for "why is my model slow": CPU plus whichever
accelerator is really present, input shapes, memory and Python stacks recorded, a short
schedule (wait 1, warm up 1, record 3 steps, once) and traces written gzip-compressed to
``<logdir>/<run>/`` with rank-aware names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch.profiler import ProfilerAction

from stepscope.capture import env, paths
from stepscope.capture.export import export_trace
from stepscope.errors import UsageError
from stepscope.model import Trace

TraceCallback = Callable[[Any], None]


class TraceWriter:
    """``on_trace_ready`` handler: each finished cycle becomes one file in the run folder."""

    def __init__(
        self,
        run_dir: str,
        *,
        gzip: bool = True,
        rank: int | None = None,
        storage_options: dict[str, Any] | None = None,
        then: TraceCallback | None = None,
        memory: bool = False,
    ) -> None:
        self.run_dir = run_dir
        self.memory = memory
        self.memory_timelines: list[str] = []
        self.gzip = gzip
        self.rank = rank
        self.storage_options = storage_options
        self.then = then
        self.paths: list[str] = []
        self.discard = False  # set to drop a cycle instead of writing it

    def __call__(self, prof: Any) -> None:
        if self.discard:
            return
        # Rank is looked up now, not at construction: scripts often build the profiler
        # before init_process_group.
        name = paths.trace_file_name(self.rank, gzip=self.gzip)
        path = export_trace(prof, paths.join(self.run_dir, name),
                            storage_options=self.storage_options)
        self.paths.append(path)
        if self.memory:
            from stepscope.capture.memory import export_memory_timeline, timeline_path

            self.memory_timelines.append(export_memory_timeline(
                prof, timeline_path(path), storage_options=self.storage_options))
        if self.then is not None:
            self.then(prof)


def _record_always(step: int) -> ProfilerAction:
    # A schedule (rather than none) keeps ProfilerStep#N markers in the trace.
    return ProfilerAction.RECORD


class Profile(torch.profiler.profile):  # type: ignore[misc, unused-ignore]
    """``torch.profiler.profile`` that knows where its traces went."""

    def __init__(self, *, writer: TraceWriter, **kwargs: Any) -> None:
        super().__init__(on_trace_ready=writer, **kwargs)
        self.writer = writer

    @property
    def run_dir(self) -> str:
        return self.writer.run_dir

    @property
    def trace_paths(self) -> list[str]:
        """Every trace written so far, oldest first."""
        return list(self.writer.paths)

    @property
    def memory_timelines(self) -> list[str]:
        """Memory timelines written beside the traces (``profile(..., memory=True)``)."""
        return list(self.writer.memory_timelines)

    @property
    def last_trace(self) -> str | None:
        return self.writer.paths[-1] if self.writer.paths else None

    def load(self) -> Trace:
        """Read the newest trace with stepscope's reader (for ``stepscope.build_report``)."""
        from stepscope.formats.load import load_trace

        if self.last_trace is None:
            raise UsageError("no trace written yet: the schedule has not completed a cycle "
                             "(call .step() once per iteration, or leave the with-block)")
        return load_trace(self.last_trace, storage_options=self.writer.storage_options)


def profile(
    logdir: str = "stepscope-logs",
    *,
    run: str | None = None,
    wait: int = 1,
    warmup: int = 1,
    active: int | None = 3,
    repeat: int = 1,
    skip_first: int = 0,
    record_shapes: bool = True,
    profile_memory: bool = True,
    with_stack: bool = True,
    activities: Iterable[Any] | None = None,
    gzip: bool = True,
    rank: int | None = None,
    storage_options: dict[str, Any] | None = None,
    on_trace_ready: TraceCallback | None = None,
    memory: bool = False,
    **torch_kwargs: Any,
) -> Profile:
    """A ready profiler: ``with stepscope.profile("logs") as prof: ... prof.step()``.

    ``active=None`` records everything between start and stop (still marking steps).
    ``on_trace_ready`` runs after each trace is written; extra keyword arguments
    (``with_flops``, ``with_modules``, ``experimental_config``, ...) go to torch.
    ``memory=True`` also writes each cycle's categorised memory timeline beside its trace
    (``<trace>.memory.raw.json.gz``; it needs shapes, memory and stacks, so turns them on).
    """
    if memory:
        record_shapes = profile_memory = with_stack = True
    _check_schedule(wait, warmup, active, repeat, skip_first)
    if active is None:
        schedule: Callable[[int], ProfilerAction] = _record_always
    else:
        schedule = torch.profiler.schedule(
            wait=wait, warmup=warmup, active=active, repeat=repeat, skip_first=skip_first
        )
    run_dir = paths.join(logdir, paths.safe_name(run) if run else paths.default_run_name())
    writer = TraceWriter(run_dir, gzip=gzip, rank=rank, storage_options=storage_options,
                         then=on_trace_ready, memory=memory)
    return Profile(
        writer=writer,
        activities=list(activities) if activities is not None else env.default_activities(),
        schedule=schedule,
        record_shapes=record_shapes,
        profile_memory=profile_memory,
        with_stack=with_stack,
        **torch_kwargs,
    )


def _check_schedule(wait: int, warmup: int, active: int | None, repeat: int,
                    skip_first: int) -> None:
    if min(wait, warmup, repeat, skip_first) < 0:
        raise UsageError("profile: wait, warmup, repeat and skip_first must be >= 0")
    if active is not None and active < 1:
        raise UsageError("profile: active must be >= 1 (or None to record everything)")
