"""Profile a program that knows nothing about profilers (the engine of ``stepscope run``).

Step boundaries come from the training loop's optimizer: the first optimizer that steps
is followed, and each return from its ``step()`` is one profiler step. torch's global
optimizer hooks run *inside* the ``Optimizer.step#...`` range, and ending a profiler step
there would interleave two ranges, so the hook only wraps that optimizer's ``step`` and
the boundary is taken when the wrapper returns (one iteration later).

Fallback, for programs that never step an optimizer (inference, evaluation): a time
window. Once ``wait + warmup`` top-level ``nn.Module`` calls went by without an optimizer
step, record ``window_s`` seconds, started and stopped at top-level module calls. If an
optimizer steps after all, that window is discarded in favour of real steps.
"""

from __future__ import annotations

import enum
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch.profiler import ProfilerAction

from stepscope.capture import env, paths
from stepscope.capture.profiler import Profile, TraceWriter
from stepscope.errors import StepscopeError, one_line


@dataclass(frozen=True)
class AutoConfig:
    logdir: str = "stepscope-logs"
    run: str | None = None
    wait: int = 1
    warmup: int = 1
    active: int = 3
    repeat: int = 1
    window_s: float = 2.0
    record_shapes: bool = True
    profile_memory: bool = True
    with_stack: bool = True


class Mode(enum.Enum):
    IDLE = "idle"  # nothing seen yet
    STEPS = "steps"  # following an optimizer
    WINDOW = "window"  # recording the time-window fallback
    DONE = "done"


@dataclass
class Outcome:
    mode: str
    traces: list[str] = field(default_factory=list)
    optimizer_steps: int = 0
    module_calls: int = 0
    note: str = ""


class AutoProfiler:
    """Install with ``install()``, end with ``finish()`` (also when the program fails)."""

    def __init__(self, config: AutoConfig) -> None:
        self.config = config
        self.mode = Mode.IDLE
        self.run_name = paths.safe_name(config.run) if config.run else paths.default_run_name()
        self.run_dir = paths.join(config.logdir, self.run_name)
        self._pid = os.getpid()
        self._main_thread = threading.get_ident()
        self._optimizer_hook: Any = None
        self._module_hooks: list[Any] = []
        self._optimizer: Any = None
        self._prof: Profile | None = None
        self._writer: TraceWriter | None = None
        self._window_end = 0.0
        self._depth = 0
        self._last_step = config.wait + config.warmup + config.active * config.repeat
        self.optimizer_steps = 0
        self.module_calls = 0
        self.traces: list[str] = []
        self._note = ""

    # -- hooks -------------------------------------------------------------------------

    def install(self) -> None:
        from torch.nn.modules.module import (
            register_module_forward_hook,
            register_module_forward_pre_hook,
        )
        from torch.optim.optimizer import register_optimizer_step_post_hook

        self._optimizer_hook = register_optimizer_step_post_hook(self._on_optimizer_step)
        self._module_hooks = [
            register_module_forward_pre_hook(self._on_module_enter),
            register_module_forward_hook(self._on_module_exit, always_call=True),
        ]

    def _remove_module_hooks(self) -> None:
        # Global module hooks put every nn.Module call on torch's slow path: keep them
        # only while the time-window fallback may still need them.
        for handle in self._module_hooks:
            handle.remove()
        self._module_hooks = []

    def _uninstall(self) -> None:
        """Remove every hook (not from inside the optimizer hook loop, which it mutates)."""
        self._remove_module_hooks()
        if self._optimizer_hook is not None:
            self._optimizer_hook.remove()
            self._optimizer_hook = None

    def _ours(self) -> bool:
        # Forked DataLoader workers inherit the hooks; only the main thread of the
        # process we were installed in may drive the profiler.
        return os.getpid() == self._pid and threading.get_ident() == self._main_thread

    def _on_optimizer_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self._optimizer is not None or not self._ours():
            return
        self._optimizer = optimizer
        if self.mode is Mode.WINDOW:
            self._stop(keep=False)
        self.mode = Mode.STEPS
        self._remove_module_hooks()
        original = optimizer.step

        def step(*a: Any, **kw: Any) -> Any:
            out = original(*a, **kw)
            self._after_optimizer_step()
            return out

        optimizer.step = step

    def _after_optimizer_step(self) -> None:
        if self.mode is not Mode.STEPS or not self._ours():
            return
        self.optimizer_steps += 1
        if self._prof is None:
            self._start(scheduled=True)
            return
        try:
            self._prof.step()  # may write a trace
        except StepscopeError as exc:
            # The trace cannot be written (bad --logdir...): say so, and let the program
            # go on unprofiled rather than fail inside its optimizer step.
            self._stop(keep=False)
            self._give_up(_cannot_write(exc))
            return
        if (self.config.repeat > 0 and self._prof.step_num >= self._last_step
                and self._prof.current_action == ProfilerAction.NONE):
            self._stop(keep=True)
            self._restore_optimizer()
            self._uninstall()
            self.mode = Mode.DONE

    def _on_module_enter(self, module: Any, args: Any) -> None:
        if not self._ours():
            return
        self._depth += 1
        if self._depth != 1 or self.mode in (Mode.STEPS, Mode.DONE):
            return
        self.module_calls += 1
        now = time.monotonic()
        if self.mode is Mode.IDLE and self.module_calls > self.config.wait + self.config.warmup:
            if self._start(scheduled=False):  # the window counts from a started profiler
                self._window_end = time.monotonic() + self.config.window_s
                self.mode = Mode.WINDOW
        elif self.mode is Mode.WINDOW and now >= self._window_end:
            self._stop(keep=True)
            self.mode = Mode.DONE
            self._uninstall()

    def _on_module_exit(self, module: Any, args: Any, output: Any) -> None:
        if self._ours() and self._depth > 0:
            self._depth -= 1

    # -- profiler ----------------------------------------------------------------------

    def _start(self, *, scheduled: bool) -> bool:
        """Start recording (following the schedule, or for the time window); False when
        the program runs its own profiler, which we then leave alone for good."""
        if _someone_else_profiling():
            self._give_up("the program runs its own torch profiler; its traces are "
                          "the ones to read")
            return False
        cfg = self.config
        self._writer = TraceWriter(self.run_dir)
        kwargs: dict[str, Any] = {}
        if scheduled:
            kwargs["schedule"] = torch.profiler.schedule(
                wait=cfg.wait, warmup=cfg.warmup, active=cfg.active, repeat=cfg.repeat)
        self._prof = Profile(writer=self._writer, activities=env.default_activities(),
                             record_shapes=cfg.record_shapes, profile_memory=cfg.profile_memory,
                             with_stack=cfg.with_stack, **kwargs)
        self._prof.start()
        return True

    def _stop(self, *, keep: bool) -> None:
        prof, writer = self._prof, self._writer
        self._prof = None
        if prof is None or writer is None:
            return
        writer.discard = not keep
        try:
            prof.stop()  # writes the trace when keep
        except StepscopeError as exc:
            self._note = _cannot_write(exc)
        self.traces.extend(writer.paths)

    def _give_up(self, note: str) -> None:
        self._note = note
        self.mode = Mode.DONE
        self._restore_optimizer()
        self._uninstall()

    def _restore_optimizer(self) -> None:
        if self._optimizer is not None and "step" in vars(self._optimizer):
            del self._optimizer.step

    def finish(self) -> Outcome:
        """Stop whatever is recording (writing its trace) and remove every hook."""
        if os.getpid() != self._pid:
            return Outcome(self.mode.value)
        mode = self.mode
        self._stop(keep=True)
        self._restore_optimizer()
        self._uninstall()
        self.mode = Mode.DONE
        note = self._note
        if not self.traces and not note:
            if mode is Mode.IDLE:
                note = ("no optimizer step and too few nn.Module calls were seen, so nothing "
                        "was profiled; wrap the code with stepscope.profile() instead")
            else:
                note = "the program ended before the profiler schedule recorded a step"
        return Outcome(mode.value if mode is not Mode.DONE else self._done_kind(),
                       list(self.traces), self.optimizer_steps, self.module_calls, note)

    def _done_kind(self) -> str:
        return "steps" if self._optimizer is not None else "window"


def _cannot_write(exc: StepscopeError) -> str:
    return f"cannot write the trace: {one_line(str(exc))}"


def _someone_else_profiling() -> bool:
    # Two Kineto profilers cannot run at once: never fight the program's own.
    return bool(torch.autograd.profiler._is_profiler_enabled)
