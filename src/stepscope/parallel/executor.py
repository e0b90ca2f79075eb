"""Executors that map a picklable function over items and call back as each finishes.

- serial: in this process (debugging, tiny runs).
- processes: a stdlib process pool (default; ``workers`` defaults to the CPU count).
- dask: ``dask.distributed`` (extra ``stepscope[dask]``): ``scheduler`` is the address of
  an existing cluster, else a LocalCluster with ``workers`` single-threaded processes.

Results come back in input order; only what ``fn`` returns crosses process boundaries, so
per-rank functions return small summaries, never events.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, TypeVar

from stepscope.errors import StepscopeError

T = TypeVar("T")
R = TypeVar("R")
Progress = Callable[[int, int], None]  # (done, total)

EXECUTORS = ("serial", "processes", "dask")


def map_ranks(fn: Callable[[T], R], items: Sequence[T], *, executor: str = "processes",
              workers: int | None = None, scheduler: str | None = None,
              progress: Progress | None = None) -> list[R]:
    if executor not in EXECUTORS:
        raise StepscopeError(f"unknown executor {executor!r} (choose from {', '.join(EXECUTORS)})")
    if executor == "serial" or (executor == "processes" and len(items) <= 1):
        out = []
        for i, item in enumerate(items):
            out.append(fn(item))
            if progress:
                progress(i + 1, len(items))
        return out
    if executor == "processes":
        return _processes(fn, items, workers, progress)
    return _dask(fn, items, workers, scheduler, progress)


def _ignore_interrupts() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (it terminates the pool).

    A terminal's Ctrl-C reaches every process of the group: a worker interrupted inside the
    pool's queue code can die holding its lock (the other workers and the parent's shutdown
    then wait forever) and prints a traceback of its own.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _processes(fn: Callable[[T], R], items: Sequence[T], workers: int | None,
               progress: Progress | None) -> list[R]:
    n = max(1, min(workers or os.cpu_count() or 1, len(items)))
    results: list[Any] = [None] * len(items)
    pool = ProcessPoolExecutor(max_workers=n, initializer=_ignore_interrupts)
    try:
        # Workers are started inside submit(): SIGINT is blocked meanwhile, so a worker never
        # runs Python with the default handler before its initializer; a Ctrl-C pressed then
        # stays pending and is raised here as soon as it is unblocked.
        main = threading.current_thread() is threading.main_thread()
        if main:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        finally:
            if main:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        for done, fut in enumerate(as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress:
                progress(done, len(items))
    except BaseException:
        _terminate(pool)
        raise
    pool.shutdown()
    return results


def _terminate(pool: ProcessPoolExecutor) -> None:
    """Stop the pool now (an interrupt or an error): kill the workers, drop queued items."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for p in processes:
        with contextlib.suppress(Exception):
            p.terminate()
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        with contextlib.suppress(Exception):
            p.join(timeout=2)


# A scheduler that answers at all answers in milliseconds; an unreachable one should fail
# fast (dask's default connect timeout is 30 s), not after seconds of a silent wait.
SCHEDULER_CONNECT_S = 3.0


def _dask(fn: Callable[[T], R], items: Sequence[T], workers: int | None, scheduler: str | None,
          progress: Progress | None) -> list[R]:
    try:
        from dask.distributed import Client, LocalCluster
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise StepscopeError(
            "the dask executor needs dask.distributed: pip install 'stepscope[dask]'"
        ) from None
    cluster = None
    try:
        if scheduler:
            client = Client(scheduler, timeout=f"{SCHEDULER_CONNECT_S:g}s")
        else:
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1,
                                   threads_per_worker=1, processes=True,
                                   dashboard_address=None, host="127.0.0.1")
            client = Client(cluster)
    except (OSError, ValueError) as exc:  # refused, timed out, or not an address
        if not scheduler:
            raise StepscopeError(f"cannot start a local Dask cluster ({exc})") from None
        raise StepscopeError(
            f"cannot reach the Dask scheduler at {scheduler} within {SCHEDULER_CONNECT_S:g} s "
            f"(is it running, and is the address tcp://HOST:PORT?): "
            f"{type(exc).__name__}: {exc}") from None
    try:
        futures = client.map(fn, list(items), pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        results: list[Any] = [None] * len(items)
        for done, fut in enumerate(dask_completed(futures), 1):
            results[index[fut.key]] = fut.result()
            if progress:
                progress(done, len(items))
        return results
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
