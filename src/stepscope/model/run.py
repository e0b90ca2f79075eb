"""A run: the rank traces of one distributed job, and how ranks are assigned to them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

# "rank3", "rank-3", "rank_3", "worker3", "worker_3" in a file name
_RANK_IN_NAME = re.compile(r"(?:rank|worker)[-_]?(\d+)", re.IGNORECASE)


@dataclass(frozen=True)
class Run:
    """Trace paths (local or URLs) of one job, in listing order."""

    location: str  # what the user gave (a directory, a prefix, or the first file)
    paths: tuple[str, ...]


def rank_from_name(path: str) -> int | None:
    name = path.rstrip("/").rsplit("/", 1)[-1]
    m = _RANK_IN_NAME.search(name)
    return int(m.group(1)) if m else None


def assign_ranks(paths: Sequence[str], info_ranks: Sequence[int | None]) -> tuple[list[int], str]:
    """Ranks for ``paths``: distributedInfo when unique for all, else file names, else order."""
    if all(r is not None for r in info_ranks) and len(set(info_ranks)) == len(info_ranks):
        return [int(r) for r in info_ranks if r is not None], "distributedInfo"
    named = [rank_from_name(p) for p in paths]
    if all(r is not None for r in named) and len(set(named)) == len(named):
        return [int(r) for r in named if r is not None], "file names"
    return list(range(len(paths))), "order"
