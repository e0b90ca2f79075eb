"""The dependency graph of a run of ranks (analysis/graph/ranks.py) from its traces and the
calls analysis/distributed/collectives.py matched across them: the run's critical path and
its what-if replays (docs/whatif.md, "A run of ranks").

The graph needs every rank's events in one process: the traces are read again here (from
the Arrow cache when it is on) one after the other, up to ``MAX_EVENTS`` in all.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from stepscope.analysis.distributed.collectives import match, matched_by, mixed_groups_note
from stepscope.analysis.distributed.rank import RankSummary
from stepscope.analysis.events.links import Links
from stepscope.analysis.events.steps import find_steps
from stepscope.analysis.events.warmup import exclude_warmup, find_warmup
from stepscope.analysis.graph.ranks import Joins, RankInput, RunGraph
from stepscope.analysis.graph.window import step_windows
from stepscope.formats import load_trace

# All ranks together. The run report's coordinator otherwise holds one summary per rank,
# never events (1,000 ranks in under 250 MB, benchmarks/README.md); the graph needs every
# rank's events at once, so it is built only while they stay within about 2 GB of Kineto
# JSON (~700 MB as columns, the size of one large single-trace report).
MAX_EVENTS = 6_000_000


@dataclass(frozen=True)
class Built:
    graph: RunGraph | None
    note: str  # why there is no graph, or what it leaves out ("" when nothing)


def joins_of(ranked: Sequence[tuple[int, RankSummary]]) -> tuple[Joins, str]:
    """Every collective matched across two or more ranks, one row per member; and a note
    when calls were left out: calls naming no process group (gloo) matched by order over
    ranks that smaller groups split (collectives.mixed_groups_note) may pair calls of
    different groups, which would join unrelated ranks."""
    index = {r: i for i, (r, _) in enumerate(ranked)}
    by = matched_by(ranked)
    groups = match(ranked, by)
    mixed = mixed_groups_note(ranked, by)
    call: list[int] = []
    member: list[int] = []
    start: list[int] = []
    dur: list[int] = []
    labels: list[str] = []
    skipped = 0
    for (coll, pg, _part, seq), by_rank in sorted(groups.items()):
        if len(by_rank) < 2:
            continue
        if mixed and not pg:
            skipped += 1
            continue
        k = len(labels)
        labels.append(f"{coll} #{seq}" + (f" ({pg})" if pg else ""))
        for r, c in by_rank.items():
            call.append(k)
            member.append(index[r])
            start.append(c.start_ns)
            dur.append(c.dur_ns)
    a = [np.asarray(x, dtype=np.int64) for x in (call, member, start, dur)]
    note = (f"{skipped} collectives not joined across ranks: {mixed}" if skipped else "")
    return Joins(a[0], a[1], a[2], a[3], tuple(labels)), note


def run_graph(paths: Sequence[str], ranked: Sequence[tuple[int, RankSummary]], *,
              use_cache: bool = True, storage_options: dict[str, Any] | None = None) -> Built:
    """``paths[i]`` is the trace of ``ranked[i]``'s rank."""
    inputs: list[RankInput] = []
    events = 0
    for path, (rank, _) in zip(paths, ranked, strict=True):  # one per rank
        trace = load_trace(path, use_cache=use_cache, storage_options=storage_options)
        events += trace.meta.events
        if events > MAX_EVENTS:
            return Built(None, f"the ranks hold more than {MAX_EVENTS:,} events: the run's "
                         "graph is not built (analyse fewer ranks or a shorter capture)")
        links = Links(trace)
        steps = find_steps(trace, links)
        warm = find_warmup(trace, steps, links)
        windows = step_windows(exclude_warmup(steps, warm) if warm is not None else steps,
                               device_end=True)
        if not windows:
            return Built(None, f"rank {rank} ({path}) has no step to analyse")
        inputs.append(RankInput(rank, trace, links, windows))
    joins, note = joins_of(ranked)
    if any(s.pipeline is not None for _, s in ranked):
        p2p = ("pipeline stages pass activations by send/recv, which the graph does not join "
               "across ranks: the path crosses ranks at collectives only")
        note = f"{note}; {p2p}" if note else p2p
    return Built(RunGraph(inputs, joins), note)
