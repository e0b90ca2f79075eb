"""Pipeline parallelism: stages from point-to-point traffic, compute and bubbles per stage.

One rank (``stage_part``, run where the trace is read): its point-to-point calls and its
compute split into forward, backward and other, over the ``ProfilerStep#N`` windows.

- Point-to-point calls are the dispatcher ops ``c10d::send`` / ``c10d::recv_`` /
  ``c10d::recv_any_source_`` that ``send``/``recv``, ``isend``/``irecv`` and
  ``batch_isend_irecv`` all go through, on every backend (gloo, NCCL); the peer is their third
  argument (``Concrete Inputs``, recorded with ``record_shapes=True``), a rank of the call's
  process group, read as a global rank through the rank's groups (``global_traffic``).
- Compute: GPU traces — kernels other than communication kernels; CPU traces — host operators
  other than the communication wrappers (``c10d::*``, ``gloo:*``, ``record_param_comms``).
  A compute interval is *backward* when it (GPU: the runtime call that launched it) starts
  inside an ``autograd::engine::evaluate_function`` range, *other* inside an ``Optimizer.*``
  range, *forward* otherwise.
- Micro-batches per step: the ``Forward i`` ranges ``ScheduleGPipe`` writes, or the
  ``PP:<stage>F<i>`` actions of the multi-stage schedules; else (the run) the activations the
  first stage sends downstream per step.

The run (``pipeline_view``): ranks that exchange point-to-point traffic form chains (a rank
talks to the previous and next stage only; multi-stage schedules over 3+ ranks form rings);
a chain's first stage is the end whose first call is a send (it computes first and sends
activations). Chains of equal length are the
data-parallel replicas of one pipeline: stage k holds the k-th rank of every chain.
Per stage (averaged over its ranks, per step): compute = |union of compute|,
idle = step − compute (waiting at point-to-point calls and the transfers themselves),
bubble % = 100 · idle / step. Theoretical bubble of GPipe and 1F1B with p stages and m
micro-batches of equal stages, no communication: (p − 1) / (m + p − 1). Imbalance = the
largest stage compute / the mean over stages.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.distributed.comm_kernels import communication_mask
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import Links, gather
from stepscope.classify.names import is_autograd_node, is_optimizer
from stepscope.model.trace import DEV_KERNEL, HOST_OP, Trace

_COMM_PREFIXES = ("c10d::", "record_param_comms", "nccl:", "gloo:", "rccl:", "mpi:", "ucc:")
_GPIPE_MB = re.compile(r"^Forward (\d+)$")
_GPIPE_BWD = re.compile(r"^Backward (\d+)$")
_ACTION_MB = re.compile(r"^PP:(\d+)F(\d+)$")  # PP:<stage>F<micro-batch>
_ACTION_W = re.compile(r"^PP:\d+W\d+$")  # backward for weights: zero-bubble schedules
I64 = npt.NDArray[np.int64]


@dataclass(frozen=True)
class StagePart:
    """One rank's pipeline figures, summed over its steps (small: travels to the coordinator)."""

    steps: int
    step_ns: int
    compute_ns: int  # |union of compute| in the steps
    forward_ns: int
    backward_ns: int
    sends: tuple[tuple[int, int], ...]  # (peer group rank, calls), -1: peer unknown
    recvs: tuple[tuple[int, int], ...]
    first_call: str  # "send" | "recv": the first point-to-point call of the first step
    sends_before_recv: int  # sends of the first step before its first receive
    microbatches: int | None  # from the schedule's own ranges, per step
    schedule: str | None  # from the schedule's own ranges
    # the rank's process groups (name, global ranks) from distributedInfo; () unknown
    groups: tuple[tuple[str, tuple[int, ...]], ...] = ()
    chunks: int = 1  # model chunks (virtual stages) on the rank, from the PP: actions
    first_peer: int = -1  # group rank the first send of the first step went to


def _is_send(name: str) -> bool:
    return name == "c10d::send"


def _is_recv(name: str) -> bool:
    return name in ("c10d::recv_", "c10d::recv_any_source_")


def _is_comm_op(name: str) -> bool:
    return name.startswith(_COMM_PREFIXES)


def _is_gpipe_forward(name: str) -> bool:
    return _GPIPE_MB.match(name) is not None


def _is_gpipe_backward(name: str) -> bool:
    return _GPIPE_BWD.match(name) is not None


def _is_action_forward(name: str) -> bool:
    return _ACTION_MB.match(name) is not None


def _is_action_weight(name: str) -> bool:
    return _ACTION_W.match(name) is not None


def _peer(text: str) -> int:
    """The peer of ``c10d::send(tensors, group, peer, tag)`` from its Concrete Inputs."""
    try:
        values = json.loads(text)
    except ValueError:
        return -1
    text = str(values[2]) if isinstance(values, list) and len(values) > 2 else ""
    return int(text) if text.isdigit() and len(text) < 10 else -1  # a rank, not garbage


def _inside(u: iv.Union, t: I64) -> npt.NDArray[np.bool_]:
    s, e = u
    if not len(s):
        return np.zeros(len(t), dtype=np.bool_)
    k = np.searchsorted(s, t, side="right") - 1
    out: npt.NDArray[np.bool_] = (k >= 0) & (t < e[np.maximum(k, 0)])
    return out


def _labels(trace: Trace, t: I64) -> npt.NDArray[np.int8]:
    """0 forward, 1 backward, 2 other (optimizer) for compute starting at times ``t``."""
    h = trace.host
    out = np.zeros(len(t), dtype=np.int8)
    for code, pred in ((1, is_autograd_node), (2, is_optimizer)):
        mask = trace.string_ids(pred)[h.name]
        out[_inside(iv.union(h.ts[mask], h.end[mask]), t) & (out == 0)] = code
    return out


def _compute(trace: Trace, links: Links) -> tuple[I64, I64, npt.NDArray[np.int8]]:
    """Starts, ends and labels of the compute intervals."""
    if trace.has_gpu:
        d = trace.device
        keep = (d.kind == DEV_KERNEL) & ~communication_mask(trace, links)
        launch = gather(trace.runtime.ts, links.device_runtime, -1)
        t = np.where(launch >= 0, launch, d.ts)[keep]
        return d.ts[keep], d.end[keep], _labels(trace, t)
    h = trace.host
    keep = (h.kind == HOST_OP) & ~trace.string_ids(_is_comm_op)[h.name]
    return h.ts[keep], h.end[keep], _labels(trace, h.ts[keep])


def _count(trace: Trace, pred: Callable[[str], bool], window: iv.Union) -> int:
    h = trace.host
    mask = trace.string_ids(pred)[h.name]
    return int(_inside(window, h.ts[mask]).sum())


def _distinct(trace: Trace, pred: Callable[[str], bool], pattern: re.Pattern[str],
              window: iv.Union) -> list[tuple[str, ...]]:
    """The regex groups of the distinct names ``pred`` picks inside ``window``."""
    h = trace.host
    mask = trace.string_ids(pred)[h.name]
    ids = np.unique(h.name[mask][_inside(window, h.ts[mask])])
    return [m.groups() for i in ids.tolist() if (m := pattern.match(trace.name(int(i))))]


def stage_part(trace: Trace, links: Links, lo: I64, hi: I64) -> StagePart | None:
    """This rank's pipeline figures over the step windows [lo, hi); None without p2p calls."""
    h = trace.host
    if not len(lo):
        return None
    window = iv.union(lo, hi)
    sends = trace.string_ids(_is_send)[h.name] & (h.kind == HOST_OP)
    recvs = trace.string_ids(_is_recv)[h.name] & (h.kind == HOST_OP)
    p2p = np.flatnonzero((sends | recvs) & _inside(window, h.ts))
    if not len(p2p):
        return None
    p2p = p2p[np.argsort(h.ts[p2p], kind="stable")]
    is_send = sends[p2p]
    ids, inv = np.unique(h.concrete_inputs[p2p], return_inverse=True)
    peers = np.array([_peer(trace.name(int(i))) if i >= 0 else -1 for i in ids.tolist()],
                     dtype=np.int64)[inv.reshape(-1)]
    tally = []
    for which in (is_send, ~is_send):
        u, n = np.unique(peers[which], return_counts=True)
        tally.append(tuple(zip(u.tolist(), n.tolist(), strict=True)))
    in_first = h.ts[p2p] < hi[0]
    first = is_send[in_first] if in_first.any() else is_send
    before = int(np.argmin(first)) if not first.all() else len(first)
    first_peers = peers[in_first][first] if in_first.any() else peers[is_send]
    s, e, label = _compute(trace, links)
    steps = len(lo)
    # micro-batches: the distinct indices of the schedule's forward ranges
    mb = len(_distinct(trace, _is_gpipe_forward, _GPIPE_MB, window))
    schedule = "GPipe" if mb and _count(trace, _is_gpipe_backward, window) else None
    chunks = 1
    if not mb:
        actions = _distinct(trace, _is_action_forward, _ACTION_MB, window)
        mb, chunks = len({a[1] for a in actions}), max(len({a[0] for a in actions}), 1)
        schedule = None if not mb else (
            "zero-bubble" if _count(trace, _is_action_weight, window) else "multi-stage")

    def measure(mask: npt.NDArray[np.bool_]) -> int:
        return int(iv.measure_in(iv.union(s[mask], e[mask]), lo, hi).sum())

    return StagePart(
        steps=steps, step_ns=int((hi - lo).sum()),
        compute_ns=measure(np.ones(len(s), dtype=np.bool_)),
        forward_ns=measure(label == 0), backward_ns=measure(label == 1),
        sends=tally[0], recvs=tally[1], first_call="send" if first[0] else "recv",
        sends_before_recv=before,
        microbatches=mb or None, schedule=schedule, chunks=chunks,
        first_peer=int(first_peers[0]) if len(first_peers) else -1,
        groups=tuple(g for g in trace.meta.process_groups if len(g[1]) > 1),
    )


@dataclass(frozen=True)
class Stage:
    stage: int
    ranks: tuple[int, ...]
    step_ns: float  # per step, mean over the stage's ranks
    compute_ns: float
    idle_ns: float
    forward_ns: float  # per step
    backward_ns: float

    @property
    def bubble_pct(self) -> float:
        return 100.0 * self.idle_ns / self.step_ns if self.step_ns > 0 else 0.0


@dataclass(frozen=True)
class Pipeline:
    stages: tuple[Stage, ...]
    microbatches: int | None
    microbatches_from: str  # "schedule ranges" | "point-to-point" | ""
    schedule: str | None  # "GPipe" | "1F1B" | "multi-stage" | "zero-bubble" | None
    theoretical_bubble_pct: float | None
    imbalance: float  # largest stage compute / mean stage compute
    stages_per_rank: int = 1  # model chunks per rank (interleaved / zero-bubble schedules)

    def per_microbatch(self, ns: float) -> float | None:
        return ns / self.microbatches if self.microbatches else None


# (sends, receives): global peer -> calls; the global peer of the first send (-1 unknown)
Traffic = tuple[dict[int, int], dict[int, int], int]


def _mapped(part: StagePart, ranks: tuple[int, ...] | None) -> Traffic | None:
    """The part's traffic with its group-rank peers read in a group of ``ranks`` (None: the
    default group, where group ranks are global ranks); None if a peer is not in it."""
    out: list[dict[int, int]] = []
    for pairs in (part.sends, part.recvs):
        peers: dict[int, int] = {}
        for peer, n in pairs:
            if peer < 0:
                continue
            if ranks is not None and peer >= len(ranks):
                return None
            g = peer if ranks is None else ranks[peer]
            peers[g] = peers.get(g, 0) + n
        out.append(peers)
    first = part.first_peer
    if ranks is not None:
        first = ranks[first] if 0 <= first < len(ranks) else -1
    return out[0], out[1], first


def global_traffic(parts: dict[int, StagePart]) -> dict[int, Traffic]:
    """Each rank's traffic by global peer.

    The trace records a point-to-point peer as a rank of the call's process group, and gloo
    does not say which group; ``distributedInfo.pg_config`` lists the rank's groups. A rank's
    group is the smallest of them under which its traffic is mirrored by its peers' (the peer
    receives from it as often as it sends to the peer, and the other way round) under one of
    the peer's own groups; ranks with no consistent group are left out.
    """
    options: dict[int, list[Traffic]] = {}
    for r, p in parts.items():
        groups = sorted(p.groups, key=lambda g: len(g[1]))
        found = [_mapped(p, ranks) for _, ranks in groups] or [_mapped(p, None)]
        options[r] = [t for t in found if t is not None]

    def mirrored(r: int, peers: dict[int, int], recv_side: bool) -> bool:
        return all(q != r and any((t[1] if recv_side else t[0]).get(r) == n
                                  for t in options.get(q, ()))
                   for q, n in peers.items())

    def consistent(r: int, t: Traffic) -> bool:
        return mirrored(r, t[0], True) and mirrored(r, t[1], False)

    return {r: next(t for t in opts if consistent(r, t))
            for r, opts in options.items() if any(consistent(r, t) for t in opts)}


def _chains(parts: dict[int, StagePart],
            traffic: dict[int, Traffic]) -> list[list[int]] | None:
    """Ranks joined by point-to-point traffic, each chain in stage order; None: not a chain."""
    nbr: dict[int, set[int]] = defaultdict(set)
    for r, (sends, recvs, _) in traffic.items():
        for peer in (*sends, *recvs):
            if peer in traffic and peer != r:
                nbr[r].add(peer)
                nbr[peer].add(r)
    if not nbr or any(len(v) > 2 for v in nbr.values()):
        return None
    chains, seen = [], set()
    for r in sorted(nbr):
        if r in seen or len(nbr[r]) != 1:
            continue
        chain = [r]
        seen.add(r)
        while (nxt := [n for n in nbr[chain[-1]] if n not in seen]):
            chain.append(nxt[0])
            seen.add(nxt[0])
        if parts[chain[0]].first_call != "send" and parts[chain[-1]].first_call == "send":
            chain.reverse()
        chains.append(chain)
    for r in sorted(set(nbr) - seen):  # rings: what is left has two neighbours each
        if r in seen:
            continue
        ring = _ring(r, parts, traffic, nbr)
        if ring is None:
            return None
        seen.update(ring)
        chains.append(ring)
    if len({len(c) for c in chains}) != 1:
        return None  # chains of different lengths: not one pipeline
    return chains


def _ring(start: int, parts: dict[int, StagePart], traffic: dict[int, Traffic],
          nbr: dict[int, set[int]]) -> list[int] | None:
    """The ring through ``start`` in stage order, when it is one: multi-stage schedules over
    more than two ranks send the last rank's activations back to the first for the next
    chunk. The first stage is the rank that sends first; the order follows its first send.
    Rings of ranks without the schedules' ``PP:`` actions are not taken for pipelines."""
    ring = [start]
    while len(ring) == 1 or ring[-1] != start:
        nxt = [n for n in nbr[ring[-1]] if len(ring) < 2 or n != ring[-2]]
        if not nxt or len(ring) > len(nbr):
            return None
        ring.append(nxt[0])
    ring.pop()
    heads = [r for r in ring if parts[r].first_call == "send"]
    if len(heads) != 1 or any(parts[r].chunks < 2 for r in ring):
        return None
    k = ring.index(heads[0])
    ring = ring[k:] + ring[:k]
    if traffic[ring[0]][2] != ring[1]:
        ring = [ring[0], *reversed(ring[1:])]
    return ring if traffic[ring[0]][2] == ring[1] else None


def _stage_mean(parts: list[StagePart], field: str) -> float:
    """A per-step figure of a stage: each rank's total / its steps, averaged over the ranks."""
    return float(np.mean([getattr(p, field) / max(p.steps, 1) for p in parts]))


def pipeline_view(parts: dict[int, StagePart]) -> Pipeline | None:
    """The pipeline of a run from its ranks' parts (rank -> part); None when there is none."""
    traffic = global_traffic(parts)
    chains = _chains(parts, traffic)
    if not chains or len(chains[0]) < 2:
        return None
    p = len(chains[0])
    first = [parts[c[0]] for c in chains]
    marked = [parts[r].microbatches for c in chains for r in c if parts[r].microbatches]
    if marked:
        m: int | None = max(set(marked), key=marked.count)
        source = "schedule ranges"
    else:  # activations the first stage sends to the second, per step
        sent = [traffic[c[0]][0].get(c[1], 0) / max(f.steps, 1)
                for f, c in zip(first, chains, strict=True)]
        m = round(float(np.median(sent))) or None
        source = "point-to-point" if m else ""
    named = {parts[r].schedule for c in chains for r in c} - {None}
    schedule = named.pop() if len(named) == 1 else None
    if schedule is None and m and m > p:
        # GPipe's first stage sends every micro-batch before its first gradient arrives;
        # 1F1B's sends p (its warm-up) and then alternates
        before = int(np.median([f.sends_before_recv for f in first]))
        schedule = "GPipe" if before >= m else "1F1B" if before == p else None
    stages = []
    for k in range(p):
        rs = [c[k] for c in chains]
        step, comp, fwd, bwd = (_stage_mean([parts[r] for r in rs], f) for f in (
            "step_ns", "compute_ns", "forward_ns", "backward_ns"))
        stages.append(Stage(stage=k, ranks=tuple(sorted(rs)), step_ns=step, compute_ns=comp,
                            idle_ns=max(step - comp, 0.0), forward_ns=fwd, backward_ns=bwd))
    comps = [s.compute_ns for s in stages]
    avg = float(np.mean(comps))
    theory = (100.0 * (p - 1) / (m + p - 1)
              if m and schedule in ("GPipe", "1F1B", None) else None)
    chunks = int(np.median([parts[r].chunks for c in chains for r in c]))
    return Pipeline(stages=tuple(stages), microbatches=m, microbatches_from=source,
                    schedule=schedule, theoretical_bubble_pct=theory,
                    imbalance=max(comps) / avg if avg > 0 else 1.0, stages_per_rank=chunks)
