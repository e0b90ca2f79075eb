"""Phases without a profiler: light hooks in the monitored program's main process.

The hooks add wall time to cumulative counters in a small file shared with the sampler
through ``mmap`` (one ``struct.pack_into`` per event; no thread, no I/O). The sampler
reads the counters at every tick, so each phase has a time series too. Phases are
exclusive: a phase entered inside another pauses it (Lightning's ``optimizer.step(closure)``
runs forward and backward inside the step), except that whatever runs inside the
DataLoader's ``__next__`` (a module used as a transform) stays ``data``.

What is timed, in the main thread of the process that installed the hooks (forked
DataLoader workers inherit the patches but an ``os.register_at_fork`` handler turns them
off in the child):

- ``data``: ``_BaseDataLoaderIter.__next__`` (the wait for the next batch; with
  ``num_workers=0`` the loading itself); each batch also counts its samples (the first
  dimension of the first tensor found in the batch);
- ``forward``: outermost ``nn.Module.__call__`` (nested calls are inside it);
- ``backward``: ``torch.autograd.backward`` (``loss.backward()`` calls it) and
  ``torch.autograd.grad``;
- ``optimizer``: between torch's global optimizer step pre- and post-hooks; each
  post-hook is one step;
- ``sync``: ``torch.cuda.synchronize``, ``Event/Stream.synchronize`` and ``Tensor.item``
  / ``Tensor.tolist`` on a CUDA tensor (each waits for the GPU);
- ``collective``: blocking ``torch.distributed`` collectives (``async_op`` ones return
  at once and are not counted).

The DataLoader hook also publishes the process ids of its workers
(``_MultiProcessingDataLoaderIter._workers``) so the sampler can tell them from other
children of the main process.
"""

from __future__ import annotations

import functools
import mmap
import os
import struct
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

# counter slots (float64) in the shared page
SLOTS = ("data", "forward", "backward", "optimizer", "sync", "collective",
         "steps", "batches", "samples",
         "running",  # 1 once the program's own code runs
         "hooked")  # 1 once torch is hooked
_INDEX = {name: i for i, name in enumerate(SLOTS)}
PIDS_OFFSET = 256  # int32 count, then int32 pids
MAX_PIDS = 64
SIZE = 4096


def create(path: str) -> None:
    """The zeroed shared page, created by whoever starts the sampler."""
    with open(path, "wb") as fh:
        fh.write(b"\0" * SIZE)


def read(path: str) -> tuple[dict[str, float], list[int]]:
    """The counters and the published worker pids (the sampler's side)."""
    with open(path, "rb") as fh:
        data = fh.read(SIZE)
    if len(data) < SIZE:
        return dict.fromkeys(SLOTS, 0.0), []
    values = struct.unpack_from(f"{len(SLOTS)}d", data, 0)
    (count,) = struct.unpack_from("i", data, PIDS_OFFSET)
    count = max(0, min(count, MAX_PIDS))
    pids = list(struct.unpack_from(f"{count}i", data, PIDS_OFFSET + 4))
    return dict(zip(SLOTS, values, strict=True)), pids


class Board:
    """The program's side of the shared page."""

    def __init__(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR)
        try:
            self._map = mmap.mmap(fd, SIZE)
        finally:
            os.close(fd)
        self._values = [0.0] * len(SLOTS)
        self._pids: list[int] = []
        self._stack: list[str] = []
        self._mark = 0.0
        self.active = True
        self._thread = threading.get_ident()
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self.active = False

    def ours(self) -> bool:
        return self.active and threading.get_ident() == self._thread

    def enter(self, slot: str) -> None:
        """Start a phase; the phase it interrupts stops counting until it resumes, so the
        phases are exclusive (Lightning runs forward and backward inside the optimizer's
        ``step(closure)``: they count as forward and backward, not as optimizer)."""
        now = time.perf_counter()
        if self._stack:
            self.add(self._stack[-1], now - self._mark)
        self._stack.append(slot)
        self._mark = now

    def leave(self, slot: str) -> None:
        now = time.perf_counter()
        while self._stack:  # a phase left by an exception without its end is closed too
            top = self._stack.pop()
            self.add(top, now - self._mark)
            self._mark = now
            if top == slot:
                return

    def inside(self) -> str | None:
        return self._stack[-1] if self._stack else None

    def add(self, slot: str, value: float) -> None:
        i = _INDEX[slot]
        self._values[i] += value
        struct.pack_into("d", self._map, i * 8, self._values[i])

    def publish_pids(self, pids: list[int]) -> None:
        new = [p for p in pids if p not in self._pids]
        if not new:
            return
        self._pids = (self._pids + new)[-MAX_PIDS:]
        struct.pack_into(f"i{len(self._pids)}i", self._map, PIDS_OFFSET,
                         len(self._pids), *self._pids)


def install_when_torch_imported(board: Board) -> None:
    """Install now if torch is loaded, else right after the program imports it (a program
    that never imports torch pays nothing, not even torch's import)."""
    if "torch" in sys.modules:
        install(board)
        return
    import importlib.abc
    import importlib.util

    class AfterTorch(importlib.abc.MetaPathFinder):
        def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
            if name != "torch":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec("torch")
            loader = getattr(spec, "loader", None)
            if spec is None or loader is None or not hasattr(loader, "exec_module"):
                return spec
            original = loader.exec_module

            def exec_module(module: Any) -> None:
                original(module)
                install(board)

            loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, AfterTorch())


def install(board: Board) -> None:
    """Patch torch (idempotent per process); never fails the program."""
    try:
        _install(board)
    except Exception as exc:  # an unknown torch: run unhooked rather than fail
        print(f"stepscope monitor: phases not timed ({type(exc).__name__}: {exc})",
              file=sys.stderr)


def _timed(board: Board, slot: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if not board.ours() or board.inside() == "data":  # work done to load data is data
            return fn(*args, **kwargs)
        board.enter(slot)
        try:
            return fn(*args, **kwargs)
        finally:
            board.leave(slot)

    return wrapper


def _install(board: Board) -> None:
    import torch
    from torch.utils.data import dataloader

    if getattr(torch, "_stepscope_monitor_hooks", False):
        return
    torch._stepscope_monitor_hooks = True  # type: ignore[attr-defined]
    board.add("hooked", 1)

    # -- data: the wait for the next batch ---------------------------------------------
    base = dataloader._BaseDataLoaderIter
    next_batch = base.__next__

    def __next__(self: Any) -> Any:
        if not board.ours():
            return next_batch(self)
        board.enter("data")
        try:
            batch = next_batch(self)
        finally:
            board.leave("data")
        board.add("batches", 1)
        board.add("samples", _batch_size(batch))
        workers = getattr(self, "_workers", None)
        if workers:
            board.publish_pids([w.pid for w in workers if w.pid])
        return batch

    base.__next__ = __next__  # type: ignore[method-assign]

    # -- forward: the outermost module call --------------------------------------------
    module_cls = torch.nn.Module
    call = module_cls.__call__
    depth = [0]

    def __call__(self: Any, *args: Any, **kwargs: Any) -> Any:
        if depth[0] or not board.ours() or board.inside() == "data":
            return call(self, *args, **kwargs)
        depth[0] = 1
        board.enter("forward")
        try:
            return call(self, *args, **kwargs)
        finally:
            depth[0] = 0
            board.leave("forward")

    module_cls.__call__ = __call__  # type: ignore[method-assign]

    # -- backward ----------------------------------------------------------------------
    torch.autograd.backward = _timed(board, "backward", torch.autograd.backward)
    torch.autograd.grad = _timed(board, "backward", torch.autograd.grad)

    # -- optimizer step: torch's global hooks ------------------------------------------
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )

    nested = [0]

    def pre(optimizer: Any, args: Any, kwargs: Any) -> None:
        if board.ours():
            nested[0] += 1
            board.enter("optimizer")

    def post(optimizer: Any, args: Any, kwargs: Any) -> None:
        if board.ours() and nested[0]:
            nested[0] -= 1
            board.leave("optimizer")
            if not nested[0]:  # an optimizer stepping inside another is one step
                board.add("steps", 1)

    register_optimizer_step_pre_hook(pre)
    register_optimizer_step_post_hook(post)

    # -- synchronising calls -----------------------------------------------------------
    torch.cuda.synchronize = _timed(board, "sync", torch.cuda.synchronize)
    for cls in (torch.cuda.Event, torch.cuda.Stream):
        cls.synchronize = _timed(board, "sync", cls.synchronize)  # type: ignore[method-assign]
    tensor = torch.Tensor
    for name in ("item", "tolist"):
        original = getattr(tensor, name)

        def on_device(self: Any, *args: Any, _original: Any = original) -> Any:
            if not self.is_cuda or not board.ours():
                return _original(self, *args)
            board.enter("sync")
            try:
                return _original(self, *args)
            finally:
                board.leave("sync")

        setattr(tensor, name, on_device)

    # -- blocking collectives ----------------------------------------------------------
    import torch.distributed as dist

    for name in ("all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                 "reduce_scatter_tensor", "broadcast", "reduce", "all_to_all",
                 "all_to_all_single", "barrier", "gather", "scatter"):
        fn = getattr(dist, name, None)
        if fn is not None:
            setattr(dist, name, _blocking(board, fn))


def _blocking(board: Board, fn: Callable[..., Any]) -> Callable[..., Any]:
    timed = _timed(board, "collective", fn)

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("async_op"):
            return fn(*args, **kwargs)
        return timed(*args, **kwargs)

    return wrapper


def _batch_size(batch: Any) -> int:
    """The first dimension of the first tensor in a batch (tensor, sequence or mapping)."""
    for _ in range(4):  # nested containers, a few levels deep
        shape = getattr(batch, "shape", None)
        if shape is not None:
            return int(shape[0]) if len(shape) else 1
        if isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        elif isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        else:
            break
    return 0
