"""Executors that map a picklable function over items and call back as each finishes.

- serial: in this process (debugging, tiny runs).
- processes: a stdlib process pool (default; ``workers`` defaults to the CPU count).
- dask: ``dask.distributed`` (extra ``stepscope[dask]``): ``scheduler`` is the address of
  an existing cluster, else a LocalCluster with ``workers`` single-threaded processes.

Results come back in input order; only what ``fn`` returns crosses process boundaries, so
per-rank functions return small summaries, never events.
"""

from __future__ import annotations

import os
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


def _processes(fn: Callable[[T], R], items: Sequence[T], workers: int | None,
               progress: Progress | None) -> list[R]:
    n = max(1, min(workers or os.cpu_count() or 1, len(items)))
    results: list[Any] = [None] * len(items)
    with ProcessPoolExecutor(max_workers=n) as pool:
        futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
        for done, fut in enumerate(as_completed(futures), 1):
            results[futures[fut]] = fut.result()
            if progress:
                progress(done, len(items))
    return results


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
            client = Client(scheduler, timeout=10)
        else:
            cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1,
                                   threads_per_worker=1, processes=True,
                                   dashboard_address=None, host="127.0.0.1")
            client = Client(cluster)
    except OSError as exc:
        raise StepscopeError(f"cannot reach the Dask scheduler {scheduler!r} ({exc})") from None
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
