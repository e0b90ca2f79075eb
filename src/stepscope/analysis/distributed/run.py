"""Reduce many ranks' summaries (analysis/distributed/rank.py) into the distributed view of a run.

Calls are matched across ranks by (collective, process group, the trace's sequence number)
when every call has one, else by their position in each (collective, process group) sequence:
the k-th all-reduce on group 0 of every rank is one collective (analysis/distributed/
collectives.py, which also builds the per-process-group tables). Only durations are
compared, never absolute timestamps: a collective finishes on all ranks together, so the rank
whose call is *shortest* arrived last (aligning the calls on their end), and every other
rank waited ``own duration − shortest``. That makes clock offsets between hosts irrelevant.

- transfer (torch-tb-profiler's "data transfer"): the shortest duration of the matched call;
  sync (its "synchronisation wait"): own duration − transfer, summed per rank.
- algorithm bandwidth = bytes / transfer time; bus bandwidth = algbw × nccl-tests' factor
  (all-reduce 2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n; others 1).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import median

import numpy as np

from stepscope.analysis.distributed.all_to_all import AllToAll, reduce_all_to_all
from stepscope.analysis.distributed.collectives import (
    GroupTable,
    bus_factor,
    group_tables,
    match,
    matched_by,
    mixed_groups_note,
)
from stepscope.analysis.distributed.fsdp import Fsdp, reduce_fsdp
from stepscope.analysis.distributed.pipeline import Pipeline, pipeline_view
from stepscope.analysis.distributed.rank import RankSummary

__all__ = ["Distributed", "analyse_run", "bus_factor"]


@dataclass(frozen=True)
class RankStep:
    step: str
    computation_ns: int
    overlap_ns: int
    communication_ns: int
    other_ns: int
    sync_ns: int  # of the matched calls starting in this step on this rank
    transfer_ns: int


@dataclass(frozen=True)
class RankRow:
    rank: int
    path: str
    computation_ns: int
    overlap_ns: int
    communication_ns: int
    other_ns: int
    sync_ns: int
    transfer_ns: int
    comm_overlap_pct: float | None
    steps: int
    per_step: tuple[RankStep, ...] = ()


@dataclass(frozen=True)
class Straggler:
    rank: int
    wait_caused_ns: int  # summed over the other ranks and all matched calls
    last_arrivals: int  # matched calls where this rank arrived last
    matched_calls: int
    computation_ns: int
    computation_excess_ns: int  # own computation − median computation of all ranks
    share_pct: float  # of all waiting in the run
    # operators where this rank spends more than the median rank: (name, excess ns), top 3
    slower_ops: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class CollectiveRow:
    collective: str
    pg: str
    group_size: int
    calls: int  # matched calls (each counted once for the run)
    ranks: int
    bytes_per_call: float | None  # mean message bytes (max of in/out), None when unknown
    dtype: str
    time_ns: int  # summed over ranks
    transfer_ns: int  # summed over matched calls: the shortest duration of each
    algbw_gbps: float | None
    busbw_gbps: float | None
    link_peak_pct: float | None  # None: the link's peak is not known from the trace


@dataclass(frozen=True)
class StepStraggler:
    step: str
    last_rank: int
    wait_ns: int  # summed over the other ranks


@dataclass(frozen=True)
class MatchedCall:
    """One collective matched across ranks: who arrived last and what the others waited."""

    collective: str
    pg: str
    seq: int
    step: str  # the step of the last arriver's call
    ranks: int
    nbytes: int  # -1 unknown
    last_rank: int
    wait_ns: int  # summed over the other ranks
    max_wait_ns: int
    transfer_ns: int


@dataclass(frozen=True)
class Imbalance:
    computation_max_ns: int
    computation_min_ns: int
    computation_mean_ns: float
    max_over_mean: float | None
    slowest_rank: int | None


@dataclass(frozen=True)
class Distributed:
    world_size: int
    backend: str | None
    rank_source: str  # distributedInfo | file names | order
    ranks: tuple[RankRow, ...]
    stragglers: tuple[Straggler, ...]  # slowest first
    collectives: tuple[CollectiveRow, ...]
    steps: tuple[StepStraggler, ...]
    calls: tuple[MatchedCall, ...]  # in (collective, group, sequence) order
    imbalance: Imbalance
    unmatched_calls: int  # calls present on some ranks only
    failed: tuple[str, ...]  # one-line errors of ranks that could not be read
    all_to_all: AllToAll | None = None  # expert-parallel traffic (analysis/distributed/all_to_all)
    fsdp: Fsdp | None = None  # FSDP units' all-gathers, reduce-scatters (distributed/fsdp)
    matched_by: str = "order"  # "sequence": the trace's Seq; "order": position per group
    matching_note: str = ""  # why order matching may pair calls of different groups (gloo)
    groups: tuple[GroupTable, ...] = ()  # per process group, every matched collective
    pipeline: Pipeline | None = None  # stages found from point-to-point traffic


def analyse_run(ranked: Sequence[tuple[int, RankSummary]], *, rank_source: str = "order",
                failed: Sequence[str] = (), link_gbps: float | None = None) -> Distributed:
    """The distributed view of ``ranked`` (rank, summary) pairs.

    ``link_gbps``: the per-rank peak of the link collectives use (GB/s, as busbw), when the
    user knows it; traces do not say which link (NVLink, PCIe, network) carried a call.
    """
    ranks = [r for r, _ in ranked]
    by = matched_by(ranked)
    groups = match(ranked, by)
    world = len(ranked)
    sync: dict[int, int] = dict.fromkeys(ranks, 0)
    transfer: dict[int, int] = dict.fromkeys(ranks, 0)
    caused: dict[int, int] = dict.fromkeys(ranks, 0)
    last_count: dict[int, int] = dict.fromkeys(ranks, 0)
    step_wait: dict[str, dict[int, int]] = defaultdict(lambda: defaultdict(int))
    unmatched = 0
    coll_acc: dict[tuple[str, str], dict[str, float]] = defaultdict(lambda: defaultdict(float))
    coll_meta: dict[tuple[str, str], tuple[int, str]] = {}
    matched: list[MatchedCall] = []
    step_sync: dict[tuple[int, str], int] = defaultdict(int)
    step_transfer: dict[tuple[int, str], int] = defaultdict(int)
    for (coll, pg, _part, seq), by_rank in sorted(groups.items()):
        durs = np.array([c.dur_ns for c in by_rank.values()], dtype=np.int64)
        members = list(by_rank)
        acc = coll_acc[(coll, pg)]
        acc["time"] += float(durs.sum())
        sample = next(iter(by_rank.values()))
        group = sample.group_size if sample.group_size > 0 else len(members)
        coll_meta.setdefault((coll, pg), (group, sample.dtype))
        acc["ranks"] = max(acc["ranks"], len(members))
        if len(members) < min(group, world):
            unmatched += 1
        if len(members) < 2:
            continue
        k = int(np.argmin(durs))
        shortest = int(durs[k])
        last = members[k]
        waited = int((durs - shortest).sum())
        acc["calls"] += 1
        acc["transfer"] += shortest
        nbytes = [c.nbytes for c in by_rank.values() if c.nbytes >= 0]
        if nbytes:
            acc["bytes"] += float(np.mean(nbytes))
            acc["sized_calls"] += 1
            acc["sized_transfer"] += shortest
        for r, c in by_rank.items():
            transfer[r] += shortest
            sync[r] += c.dur_ns - shortest
            step_sync[(r, c.step)] += c.dur_ns - shortest
            step_transfer[(r, c.step)] += shortest
        caused[last] += waited
        last_count[last] += 1
        matched.append(MatchedCall(
            collective=coll, pg=pg, seq=seq, step=by_rank[last].step, ranks=len(members),
            nbytes=max(nbytes, default=-1), last_rank=last, wait_ns=waited,
            max_wait_ns=int(durs.max()) - shortest, transfer_ns=shortest,
        ))
        step_wait[by_rank[last].step][last] += waited
    rows = []
    comp: dict[int, int] = {}
    for rank, s in ranked:
        comp[rank] = s.total("computation_ns") + s.total("overlap_ns")
        rows.append(RankRow(
            rank=rank, path=s.path, computation_ns=s.total("computation_ns"),
            overlap_ns=s.total("overlap_ns"), communication_ns=s.total("communication_ns"),
            other_ns=s.total("other_ns"), sync_ns=sync[rank], transfer_ns=transfer[rank],
            comm_overlap_pct=s.comm_overlap_pct, steps=len(s.steps),
            per_step=tuple(
                RankStep(st.step, st.computation_ns, st.overlap_ns, st.communication_ns,
                         st.other_ns, step_sync.get((rank, st.step), 0),
                         step_transfer.get((rank, st.step), 0))
                for st in s.steps
            ),
        ))
    med = median(comp.values()) if comp else 0
    summaries = dict(ranked)
    total_wait = sum(caused.values())
    stragglers = sorted(
        (Straggler(rank=r, wait_caused_ns=caused[r], last_arrivals=last_count[r],
                   matched_calls=sum(1 for g in groups.values() if r in g and len(g) > 1),
                   computation_ns=comp[r], computation_excess_ns=int(comp[r] - med),
                   share_pct=100.0 * caused[r] / total_wait if total_wait else 0.0,
                   slower_ops=_slower_ops(r, summaries))
         for r in ranks if caused[r] > 0),
        key=lambda s: (-s.wait_caused_ns, s.rank),
    )
    collectives = []
    for (coll, pg), acc in sorted(coll_acc.items(), key=lambda kv: -kv[1]["time"]):
        group, dtype = coll_meta[(coll, pg)]
        bytes_per = acc["bytes"] / acc["sized_calls"] if acc["sized_calls"] else None
        algbw = busbw = None
        if bytes_per is not None and acc["sized_transfer"] > 0:
            algbw = acc["bytes"] / acc["sized_transfer"]  # bytes/ns == GB/s
            busbw = algbw * bus_factor(coll, group)
        collectives.append(CollectiveRow(
            collective=coll, pg=pg, group_size=group, calls=int(acc["calls"]),
            ranks=int(acc["ranks"]), bytes_per_call=bytes_per, dtype=dtype,
            time_ns=int(acc["time"]), transfer_ns=int(acc["transfer"]), algbw_gbps=algbw,
            busbw_gbps=busbw,
            link_peak_pct=100.0 * busbw / link_gbps if busbw is not None and link_gbps else None,
        ))
    steps = tuple(
        StepStraggler(step=step, last_rank=max(w, key=lambda r: w[r]), wait_ns=sum(w.values()))
        for step, w in sorted(step_wait.items(), key=lambda kv: _step_key(kv[0])) if w
    )
    values = list(comp.values())
    mean = float(np.mean(values)) if values else 0.0
    imbalance = Imbalance(
        computation_max_ns=max(values, default=0), computation_min_ns=min(values, default=0),
        computation_mean_ns=mean, max_over_mean=max(values) / mean if mean > 0 else None,
        slowest_rank=max(comp, key=lambda r: comp[r]) if comp else None,
    )
    backends = {s.backend for _, s in ranked if s.backend}
    return Distributed(
        world_size=world, backend=backends.pop() if len(backends) == 1 else None,
        rank_source=rank_source, ranks=tuple(rows), stragglers=tuple(stragglers),
        collectives=tuple(collectives), steps=steps, calls=tuple(matched), imbalance=imbalance,
        unmatched_calls=unmatched, failed=tuple(failed), matched_by=by,
        matching_note=mixed_groups_note(ranked, by),
        groups=group_tables(ranked, groups),
        pipeline=pipeline_view({r: s.pipeline for r, s in ranked if s.pipeline is not None}),
        all_to_all=reduce_all_to_all(ranked), fsdp=reduce_fsdp(ranked),
    )


def _step_key(step: str) -> tuple[int, str]:
    return (int(step), "") if step.isdigit() else (1 << 62, step)


def _slower_ops(rank: int, summaries: dict[int, RankSummary]) -> tuple[tuple[str, int], ...]:
    """The rank's top operators that take longer than on the median rank (over all steps)."""
    own = summaries[rank]
    others = [dict(s.top_ops) for r, s in summaries.items() if r != rank]
    if not others:
        return ()
    excess = []
    for name, ns in own.top_ops:
        typical = median(o.get(name, 0) for o in others)
        if ns > typical:
            excess.append((name, int(ns - typical)))
    excess.sort(key=lambda x: -x[1])
    return tuple(excess[:3])
