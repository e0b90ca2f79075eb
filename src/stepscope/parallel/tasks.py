"""The per-rank task: read one trace (through the cache) and summarise it for the run."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.analysis.distributed.rank import RankSummary, rank_summary
from stepscope.errors import StepscopeError, one_line
from stepscope.formats import load_trace


@dataclass(frozen=True)
class RankTask:
    path: str
    use_cache: bool = True
    storage_options: dict[str, Any] | None = None


@dataclass(frozen=True)
class RankFailure:
    path: str
    error: str  # one line


def summarise_rank(task: RankTask) -> RankSummary | RankFailure:
    """Module-level (picklable) so every executor can ship it to workers."""
    try:
        trace = load_trace(task.path, use_cache=task.use_cache,
                           storage_options=task.storage_options, workers=1)
        return rank_summary(trace)
    except StepscopeError as exc:
        return RankFailure(task.path, one_line(str(exc)))
