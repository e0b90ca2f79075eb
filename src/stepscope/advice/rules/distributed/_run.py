"""Shared figures for the multi-rank rules: per-step averages over the ranks of a run."""

from __future__ import annotations

from stepscope.analysis.distributed.run import Distributed, RankRow


def step_ns(row: RankRow) -> float:
    total = row.computation_ns + row.overlap_ns + row.communication_ns + row.other_ns
    return total / max(row.steps, 1)


def mean_step_ns(dist: Distributed) -> float:
    rows = dist.ranks
    return sum(step_ns(r) for r in rows) / len(rows) if rows else 0.0


def mean_steps(dist: Distributed) -> float:
    rows = dist.ranks
    return sum(max(r.steps, 1) for r in rows) / len(rows) if rows else 1.0
