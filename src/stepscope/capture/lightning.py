"""PyTorch Lightning integration: ``Trainer(callbacks=[StepscopeCallback("logs")])`` to
profile, ``MonitorCallback("logs")`` to monitor (``stepscope.monitor()``) the training.

A callback rather than a Lightning ``Profiler`` subclass: the callback API is stable
across Lightning 1.x/2.x and gives exactly the hooks we need (train start, each training
batch end, train end or exception). Traces land in the same ``<logdir>/<run>/`` layout as
``stepscope.profile``, named by ``trainer.global_rank`` under multi-process strategies.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from stepscope.capture import paths
from stepscope.capture.profiler import Profile, profile


def _callback_base() -> Any:
    # ``lightning`` and ``pytorch_lightning`` are distinct packages whose Trainers only
    # accept their own Callback class: follow whichever the program imported first.
    order = ["lightning.pytorch", "pytorch_lightning"]
    order.sort(key=lambda name: name not in sys.modules)
    for name in order:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        return module.Callback
    raise ImportError("stepscope.capture.lightning needs Lightning: "
                      "pip install lightning (or pytorch-lightning)")


Callback: Any = _callback_base()


class StepscopeCallback(Callback):  # type: ignore[misc]
    """Profile training batches with ``stepscope.profile``; one step per training batch."""

    def __init__(
        self,
        logdir: str = "stepscope-logs",
        *,
        run: str | None = None,
        wait: int = 1,
        warmup: int = 1,
        active: int = 3,
        repeat: int = 1,
        **profile_kwargs: Any,
    ) -> None:
        super().__init__()
        self.logdir = logdir
        self.run = run
        self.wait, self.warmup, self.active, self.repeat = wait, warmup, active, repeat
        self.profile_kwargs = profile_kwargs
        self.profiler: Profile | None = None
        self.trace_paths: list[str] = []

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        multi = int(getattr(trainer, "world_size", 1)) > 1
        rank = int(trainer.global_rank) if multi else None
        run = self.run or paths.default_run_name(distributed=multi)
        self.profiler = profile(self.logdir, run=run, rank=rank, wait=self.wait,
                                warmup=self.warmup, active=self.active, repeat=self.repeat,
                                **self.profile_kwargs)
        self.profiler.start()

    def on_train_batch_end(self, trainer: Any, pl_module: Any, *args: Any, **kwargs: Any) -> None:
        if self.profiler is not None:
            self.profiler.step()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.profiler is None:
            return
        prof, self.profiler = self.profiler, None
        prof.stop()
        self.trace_paths.extend(prof.trace_paths)


class MonitorCallback(Callback):  # type: ignore[misc]
    """``stepscope.monitor()`` around ``fit``'s training: ``Trainer(callbacks=
    [MonitorCallback("logs")])``; the verdict is ``callback.result.bound`` afterwards.
    Under several processes each rank monitors its own, in ``<run>_rank<r>``."""

    def __init__(self, logdir: str = "stepscope-logs", *, run: str | None = None,
                 hz: float = 10.0, report: bool = True) -> None:
        super().__init__()
        self.logdir, self.run, self.hz, self.report = logdir, run, hz, report
        self.session: Any = None
        self.result: Any = None

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        from stepscope.capture.monitor.context import Session

        multi = int(getattr(trainer, "world_size", 1)) > 1
        run = self.run or f"{paths.default_run_name(distributed=multi)}_monitor"
        if multi:
            run = f"{run}_rank{int(trainer.global_rank)}"
        self.session = Session(self.logdir, run=run, hz=self.hz, report=self.report)
        self.session.start()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._stop()

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        self._stop()

    def _stop(self) -> None:
        if self.session is not None:
            session, self.session = self.session, None
            self.result = session.stop()
