"""Map per-rank work over many traces: serial, a process pool (default) or Dask."""

from stepscope.parallel.executor import EXECUTORS, map_ranks

__all__ = ["EXECUTORS", "map_ranks"]
