"""FSDP / ZeRO-3: the all-gathers and reduce-scatters of each FSDP unit and how much of each
computation hides.

FSDP shards every unit's parameters over the ranks: before a unit's forward (and again before
its backward) it all-gathers them, after its backward it reduce-scatters the gradients. The
communication hides behind computation only when it is issued early (prefetch); otherwise
the unit waits for its parameters.

- FSDP is recognised by its record_function ranges: ``FSDP::*`` (FSDP2, ``fully_shard``) or
  ``FullyShardedDataParallel.*`` (FSDP1).
- A unit's collectives are the dispatcher ops ``c10d::_allgather_base_`` /
  ``c10d::allgather_into_tensor_coalesced`` (all-gather) and ``c10d::_reduce_scatter_base_``
  / ``c10d::reduce_scatter_tensor_coalesced`` (reduce-scatter) inside FSDP2's
  ``FSDP::all_gather (unit)`` / ``FSDP::post_backward_reduce (unit)`` ranges; FSDP1 does not
  name its units (one row, unit ``""``).
- Each op is paired with its execution (the communication kernel, or the backend's own
  ``gloo:*`` range on CPU) in issue order: backends run a group's calls in the order they
  were issued, so the k-th execution of a kind after an op started is that op's. gloo
  executes a reduce-scatter as an all-reduce (``gloo:all_reduce``), so either kind pairs with
  a reduce-scatter.
- overlap = the execution's time covered by computation (analysis/distributed/rank.py's
  definition); exposed = the rest. On CPU traces, host operators that enclose an FSDP range
  or a c10d op on their thread are not computation here: autograd runs FSDP's backward hooks
  inside ``autograd::engine::evaluate_function: ...`` and the hook's wait for a prefetched
  all-gather would otherwise count as computation hiding that all-gather.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from stepscope.analysis.events import intervals as iv
from stepscope.model.trace import HOST_OP, Trace

if TYPE_CHECKING:
    from stepscope.analysis.distributed.rank import Call, RankSummary

ALL_GATHER = "all_gather"
REDUCE_SCATTER = "reduce_scatter"
_OPS = {
    "c10d::_allgather_base_": ALL_GATHER, "c10d::allgather_into_tensor_coalesced": ALL_GATHER,
    "c10d::_reduce_scatter_base_": REDUCE_SCATTER,
    "c10d::reduce_scatter_tensor_coalesced": REDUCE_SCATTER,
}
_EXECUTES = {ALL_GATHER: ("allgather",), REDUCE_SCATTER: ("reducescatter", "allreduce")}
_UNIT = re.compile(r"^FSDP::(?:all_gather|post_backward_reduce|reduce_scatter)\w* \((.*)\)$")


@dataclass(frozen=True)
class UnitComm:
    unit: str  # the FSDP2 module name ("" when the trace does not name units)
    kind: str  # all_gather | reduce_scatter
    calls: int
    nbytes: int  # summed over calls; -1 unknown
    dur_ns: int  # executions' time
    overlap_ns: int  # of it, covered by computation


@dataclass(frozen=True)
class RankFsdp:
    version: str  # "FSDP2" | "FSDP1"
    units: tuple[UnitComm, ...]
    computation_ns: int = 0  # in the steps, by this module's definition (hook waits excluded)


@dataclass(frozen=True)
class FsdpUnit:
    """One (unit, kind) row of the run: figures per rank, averaged over the ranks."""

    unit: str
    kind: str
    calls: float
    nbytes: float | None
    time_ns: float
    exposed_ns: float

    @property
    def overlap_pct(self) -> float | None:
        return 100.0 * (1 - self.exposed_ns / self.time_ns) if self.time_ns > 0 else None


@dataclass(frozen=True)
class Fsdp:
    version: str
    ranks: int  # ranks with FSDP ranges
    units: tuple[FsdpUnit, ...]
    computation_ns: float = 0.0  # per rank (mean), all steps: what communication can hide under

    def total(self, kind: str, field: str) -> float:
        return float(sum(getattr(u, field) for u in self.units if u.kind == kind))

    def overlap_pct(self, kind: str) -> float | None:
        time = self.total(kind, "time_ns")
        return 100.0 * (1 - self.total(kind, "exposed_ns") / time) if time > 0 else None


def _is_fsdp1(name: str) -> bool:
    return name.startswith("FullyShardedDataParallel.")


def _is_fsdp2(name: str) -> bool:
    return name.startswith("FSDP::")


def _is_fsdp_op(name: str) -> bool:
    return name in _OPS


def _is_marker(name: str) -> bool:
    return name.startswith(("FSDP::", "FullyShardedDataParallel.", "c10d::"))


def _host_computation(trace: Trace, comp: iv.Union) -> iv.Union:
    """CPU traces: ``comp`` without the operators that enclose FSDP hooks or c10d ops."""
    if trace.has_gpu:
        return comp
    h = trace.host
    named = h.name >= 0
    marker = trace.string_ids(_is_marker)[h.name] & named
    ops = (h.kind == HOST_OP) & named & ~marker & ~trace.string_ids(_is_comm_name)[h.name]
    keep = ops.copy()
    for tid in np.unique(h.tid[marker]).tolist():
        m_ts = np.sort(h.ts[marker & (h.tid == tid)])
        mine = np.flatnonzero(ops & (h.tid == tid))
        # markers starting inside the operator: it encloses a hook or a collective
        inside = (np.searchsorted(m_ts, h.end[mine], side="left")
                  - np.searchsorted(m_ts, h.ts[mine], side="left"))
        keep[mine[inside > 0]] = False
    return iv.union(h.ts[keep], h.end[keep])


def _is_comm_name(name: str) -> bool:
    return name.startswith(("record_param_comms", "nccl:", "gloo:"))


def rank_fsdp(trace: Trace, calls: Sequence[Call], comp: iv.Union, starts: np.ndarray,
              ends: np.ndarray) -> RankFsdp | None:
    """This rank's FSDP units; None when the trace has no FSDP ranges. ``starts``/``ends``:
    the step windows (computation is counted inside them)."""
    h = trace.host
    v2 = trace.string_ids(_is_fsdp2)[h.name] & (h.name >= 0)
    v1 = trace.string_ids(_is_fsdp1)[h.name] & (h.name >= 0)
    if not v2.any() and not v1.any():
        return None
    comp = _host_computation(trace, comp)
    computation = int(iv.measure_in(comp, starts, ends).sum()) if len(starts) else 0
    ann = np.flatnonzero(trace.string_ids(_names_unit)[h.name] & (h.name >= 0))
    ops = np.flatnonzero(trace.string_ids(_is_fsdp_op)[h.name] & (h.kind == HOST_OP)
                         & (h.name >= 0))
    # per kind, its executions in start order and a cursor: pairing is in issue order
    execs = {kind: sorted((c for c in calls if c.collective in colls), key=lambda c: c.start_ns)
             for kind, colls in _EXECUTES.items()}
    cursor = dict.fromkeys(execs, 0)
    spans: list[tuple[str, str, int, int, int]] = []
    ordered = ops[np.argsort(h.ts[ops], kind="stable")]
    unit_of = dict(zip(ordered.tolist(), _units(trace, ann, ordered), strict=True))
    for i in ordered.tolist():
        kind = _OPS[trace.name(int(h.name[i]))]
        todo, k = execs[kind], cursor[kind]
        while k < len(todo) and todo[k].start_ns < h.ts[i]:
            k += 1  # an execution before the op is not its own (the op was cut off)
        if k < len(todo):
            c = todo[k]
            spans.append((unit_of[i], kind, c.start_ns, c.start_ns + c.dur_ns, c.nbytes))
            k += 1
        cursor[kind] = k
    if not spans:
        return RankFsdp("FSDP2" if v2.any() else "FSDP1", (), computation)
    lo = np.array([s[2] for s in spans], dtype=np.int64)
    hi = np.array([s[3] for s in spans], dtype=np.int64)
    covered = iv.measure_in(comp, lo, hi)
    acc: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for (unit, kind, start, end, nbytes), ov in zip(spans, covered.tolist(), strict=True):
        a = acc[(unit, kind)]
        a[0] += 1
        a[1] = -1 if nbytes < 0 or a[1] < 0 else a[1] + nbytes
        a[2] += end - start
        a[3] += int(ov)
    units = tuple(UnitComm(u, k, a[0], a[1], a[2], a[3]) for (u, k), a in acc.items())
    return RankFsdp("FSDP2" if v2.any() else "FSDP1", units, computation)


def _names_unit(name: str) -> bool:
    return _UNIT.match(name) is not None


def _units(trace: Trace, ann: np.ndarray, ops: np.ndarray) -> list[str]:
    """Per op, the unit named by the innermost unit-naming FSDP2 range (``ann``) around it on
    its thread, "" when none: per thread, the ranges nest (a thread's ranges are a stack), so
    the innermost one around an op is the last to start before it or one of its ancestors
    (``intervals.nest_sorted``), found for all ops at once one nesting level at a time."""
    h = trace.host
    out = [""] * len(ops)
    for tid in np.unique(h.tid[ops]).tolist():
        rng = ann[h.tid[ann] == tid]
        at = np.flatnonzero(h.tid[ops] == tid)
        if not len(rng):
            continue
        rng = rng[np.lexsort((-h.end[rng], h.ts[rng]))]  # start asc, end desc
        start, end = h.ts[rng], h.end[rng]
        depth, parent = iv.nest_sorted(start, end)
        cand = np.searchsorted(start, h.ts[ops[at]], side="right") - 1
        op_end = h.end[ops[at]]
        for _ in range(int(depth.max()) + 1):  # climb while the candidate ends too early
            short = (cand >= 0) & (end[np.maximum(cand, 0)] < op_end)
            if not short.any():
                break
            cand = np.where(short, parent[np.maximum(cand, 0)], cand)
        for j, c in zip(at.tolist(), cand.tolist(), strict=True):
            if c >= 0:
                m = _UNIT.match(trace.name(int(h.name[rng[c]])))
                out[j] = m.group(1) if m else ""
    return out


def reduce_fsdp(ranked: Sequence[tuple[int, RankSummary]]) -> Fsdp | None:
    parts = [s.fsdp for _, s in ranked if s.fsdp is not None]
    if not parts:
        return None
    n = len(parts)
    acc: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])
    first: dict[tuple[str, str], int] = {}
    for p in parts:
        for u in p.units:
            key = (u.unit, u.kind)
            first.setdefault(key, len(first))
            a = acc[key]
            a[0] += u.calls
            a[1] = -1.0 if u.nbytes < 0 or a[1] < 0 else a[1] + u.nbytes
            a[2] += u.dur_ns
            a[3] += u.dur_ns - u.overlap_ns
    units = tuple(
        FsdpUnit(unit=u, kind=k, calls=a[0] / n, nbytes=a[1] / n if a[1] >= 0 else None,
                 time_ns=a[2] / n, exposed_ns=a[3] / n)
        for (u, k), a in sorted(acc.items(), key=lambda kv: (kv[0][1], first[kv[0]]))
    )
    versions = {p.version for p in parts}
    return Fsdp(version="/".join(sorted(versions)), ranks=n, units=units,
                computation_ns=sum(p.computation_ns for p in parts) / n)
