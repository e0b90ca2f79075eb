"""Collectives matched across ranks, and per process group: transfer, waits, skew, bandwidth.

Matching. PyTorch writes, on ``record_param_comms`` and NCCL kernels, the process group's
name (``Process Group Name``) and, since 2.4 on NCCL, the group's own call counter (``Seq``):
the k-th collective issued on a group carries the same ``Seq`` on every member. When every
call of every rank has it, calls match by (process group, ``Seq``, collective name):
``matched_by = "sequence"``, exact even when a rank's trace starts or stops mid-run. Otherwise
(gloo writes neither; older traces have no ``Seq``) the k-th call of each (collective, process
group) on every rank is one collective: ``matched_by = "order"``, exact when every rank's
window holds the same calls. Calls without a group name (gloo) are first split by the ranks'
sequence of (collective, bytes): members of one group issue the same calls, so the
data-parallel groups of unequal pipeline stages are not paired with each other.

Point-to-point send/recv are not collectives (two ranks, no common completion): they are left
out here (analysis/distributed/pipeline.py reads them).

Per matched call (a collective completes on all members together, so durations compare
without clocks):
- transfer = the shortest duration among the members (the last to arrive waits for nobody);
- wait of a rank = its own duration − transfer;
- start skew = latest − earliest start on the wall clock (Kineto's ``ts`` plus
  ``baseTimeNanoseconds``): needs the hosts' clocks to agree (one host, or NTP/PTP), unlike
  the waits; on one host it equals the largest wait;
- algbw = bytes / transfer; busbw = algbw × nccl-tests' factor for n members (all-reduce
  2(n−1)/n; all-gather, reduce-scatter, all-to-all (n−1)/n; broadcast, reduce 1), bytes being
  the larger of the input and output message.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from stepscope.analysis.distributed.rank import Call, RankSummary

# (collective, process group, partition of the ranks, sequence number or order)
Key = tuple[str, str, int, int]


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' bus bandwidth factor of a collective over ``n`` ranks."""
    if n <= 1:
        return 1.0
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def matched_by(ranked: Sequence[tuple[int, RankSummary]]) -> str:
    """"sequence" when every call carries the trace's ``Seq``, else "order"."""
    calls = [c for _, s in ranked for c in s.calls]
    return "sequence" if calls and all(c.trace_seq >= 0 for c in calls) else "order"


def _partitions(ranked: Sequence[tuple[int, RankSummary]]) -> dict[int, int]:
    """rank -> partition for calls without a process-group name (gloo): ranks issuing the same
    sequence of (collective, bytes) share one. Members of one group issue the same calls; ranks
    of different groups differ (e.g. the data-parallel groups of unequal pipeline stages), and
    matching across them by order would pair calls of different groups. The split is kept only
    when every part is a process group the ranks' ``distributedInfo`` lists: ranks whose
    captures merely start or stop at different calls stay together."""
    seen: dict[tuple[tuple[str, int], ...], int] = {}
    out = {}
    for rank, s in ranked:
        sig = tuple((c.collective, c.nbytes) for c in s.calls if not c.pg)
        out[rank] = seen.setdefault(sig, len(seen))
    if len(seen) > 1:
        known = {frozenset(g) for _, s in ranked for _, g in s.process_groups}
        parts: dict[int, set[int]] = defaultdict(set)
        for rank, k in out.items():
            parts[k].add(rank)
        if not all(frozenset(p) in known for p in parts.values()):
            return dict.fromkeys(out, 0)
    return out


def mixed_groups_note(ranked: Sequence[tuple[int, RankSummary]], by: str) -> str:
    """A warning when calls without a process-group name (gloo) were matched over ranks that the
    traces' ``distributedInfo`` splits into smaller groups no call sequence tells apart (e.g. the
    tensor-parallel groups of a symmetric TP x DP run): matching by order then pairs calls of
    different groups, so their waits, skews and bandwidths mix groups. Empty when not so."""
    if by != "order":
        return ""
    part = _partitions(ranked)
    members: dict[int, set[int]] = defaultdict(set)
    for rank, s in ranked:
        if any(not c.pg for c in s.calls):
            members[part.get(rank, 0)].add(rank)
    listed = {frozenset(g) for _, s in ranked for _, g in s.process_groups}
    for ranks in members.values():
        smaller = sorted(sorted(g) for g in listed if 1 < len(g) < len(ranks) and g <= ranks)
        if smaller:
            shown = ", ".join("{" + ",".join(map(str, g)) + "}" for g in smaller[:4])
            more = f" and {len(smaller) - 4} more" if len(smaller) > 4 else ""
            return (f"the calls name no process group (gloo) and the traces list smaller groups "
                    f"({shown}{more}) among ranks {min(ranks)}-{max(ranks)}: calls were matched "
                    "by order over all of them, so per-call waits, skews and bandwidths may "
                    "pair calls of different groups")
    return ""


def match(ranked: Sequence[tuple[int, RankSummary]], by: str) -> dict[Key, dict[int, Call]]:
    """Calls of all ranks grouped into collectives: key -> {rank: call}."""
    part = _partitions(ranked) if by == "order" else {}
    groups: dict[Key, dict[int, Call]] = defaultdict(dict)
    for rank, s in ranked:
        for c in s.calls:
            key = (c.collective, c.pg, 0 if c.pg else part.get(rank, 0),
                   c.trace_seq if by == "sequence" else c.seq)
            groups[key][rank] = c
    return groups


@dataclass(frozen=True)
class GroupCall:
    """One collective matched across the members of its process group."""

    name: str
    seq: int  # the trace's Seq (matched_by "sequence") or the position in the group's order
    ranks: tuple[int, ...]  # members present, ascending
    nbytes: int  # -1 unknown
    transfer_ns: int
    skew_ns: int
    wait_ns: tuple[int, ...]  # per member, in ``ranks`` order
    algbw_gbps: float | None
    busbw_gbps: float | None


@dataclass(frozen=True)
class GroupTable:
    pg: str  # the process group's name ("" when the trace does not say)
    ranks: tuple[int, ...]  # every rank seen in the group's calls
    calls: tuple[GroupCall, ...]  # matched across >= 2 ranks, in issue order

    @property
    def wait_ns(self) -> dict[int, int]:
        out: dict[int, int] = dict.fromkeys(self.ranks, 0)
        for c in self.calls:
            for r, w in zip(c.ranks, c.wait_ns, strict=True):
                out[r] += w
        return out


def group_tables(ranked: Sequence[tuple[int, RankSummary]],
                 groups: dict[Key, dict[int, Call]]) -> tuple[GroupTable, ...]:
    base = {r: s.clock_base_ns for r, s in ranked}
    by_pg: dict[tuple[str, int], list[tuple[int, GroupCall]]] = defaultdict(list)
    seen: dict[tuple[str, int], set[int]] = defaultdict(set)
    for (coll, pg, part, seq), by_rank in groups.items():
        seen[(pg, part)].update(by_rank)
        if len(by_rank) < 2:
            continue
        ranks = tuple(sorted(by_rank))
        calls = [by_rank[r] for r in ranks]
        transfer = min(c.dur_ns for c in calls)
        starts = [c.start_ns + base[r] for r, c in zip(ranks, calls, strict=True)]
        sizes = [c.nbytes for c in calls if c.nbytes >= 0]
        nbytes = max(sizes, default=-1)
        group = max(calls[0].group_size, len(ranks))
        algbw = nbytes / transfer if nbytes >= 0 and transfer > 0 else None  # bytes/ns = GB/s
        first = min(starts)
        by_pg[(pg, part)].append((first, GroupCall(
            name=coll, seq=seq, ranks=ranks, nbytes=nbytes, transfer_ns=transfer,
            skew_ns=max(starts) - first, wait_ns=tuple(c.dur_ns - transfer for c in calls),
            algbw_gbps=algbw, busbw_gbps=None if algbw is None else algbw * bus_factor(coll, group),
        )))
    return tuple(
        GroupTable(pg=key[0], ranks=tuple(sorted(seen[key])),
                   calls=tuple(c for _, c in sorted(by_pg[key], key=lambda x: (x[0], x[1].seq))))
        for key in sorted(seen, key=lambda k: (k[0], min(seen[k])))
    )
