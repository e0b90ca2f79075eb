"""All-to-all traffic (expert parallelism): who sends how many bytes to whom.

An MoE layer dispatches each token to the rank holding its expert with an all-to-all whose
split sizes are the tokens (rows) per destination, and combines the results with a second
all-to-all the other way. The split sizes are in the trace:

- NCCL (``record_param_comms``): ``In split size`` / ``Out split size`` (rows per peer),
  ``In msg nelems`` / ``Out msg nelems`` (elements in all), ``dtype`` and ``Process Group
  Ranks`` (the group's global ranks). Empty splits mean an even split.
- gloo (and any backend, from the dispatcher op ``c10d::alltoall_base_``): its concrete inputs
  ``[output, input, group, output_split_sizes, input_split_sizes, ...]`` and the input's dims
  and dtype; ``c10d::alltoall_`` (tensor lists) carries one tensor per peer. The op does not
  name its group: peers are global ranks when the split list covers the whole world, and the
  call is counted as unmapped otherwise.

Bytes sent to peer j = split_j × row bytes, row bytes = element size × elements per row
(elements / rows). Each rank contributes its own row of the rank × rank matrix; the run sums
them (analysis/distributed/run.py holds only these per-rank vectors, never events).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import HOST_OP, Trace

if TYPE_CHECKING:
    from stepscope.analysis.distributed.rank import RankSummary

I64 = npt.NDArray[np.int64]

# A rank receiving more than this × the mean is hot. 1.25 is the usual MoE capacity factor
# (Switch Transformer, GShard, Megatron's default headroom): an expert rank above it would
# drop tokens under that capacity, and below it an even exchange saves < 20 % of the call.
HOT_RATIO = 1.25

# Above this many ranks the N x N matrix (8 N² bytes: 128 MB at 4,096) is not kept; the
# per-rank sent/received vectors and the finding still are.
MAX_MATRIX_RANKS = 4096

_C10D_BASE = "c10d::alltoall_base_"
_C10D_LIST = "c10d::alltoall_"


@dataclass(frozen=True)
class RankAllToAll:
    """One rank's all-to-all traffic, summed over its calls (global peer ranks)."""

    calls: int
    peers: I64  # global ranks this rank exchanged with, ascending
    sent: I64  # bytes sent to each peer (this rank's row of the matrix)
    received: I64  # bytes received from each peer (from its own output splits)
    unmapped: int  # calls whose group's global ranks are unknown (not in the matrix)


@dataclass(frozen=True)
class AllToAll:
    ranks: tuple[int, ...]  # the matrix's rows/columns, in order; () when no call was placed
    matrix: I64  # [i, j]: bytes ranks[i] sent to ranks[j], summed over calls; (0, 0) when
    # there are more than MAX_MATRIX_RANKS ranks
    sent: I64
    received: I64
    imbalance: float  # max / mean of received bytes
    hot_ranks: tuple[int, ...]  # received >= HOT_RATIO × mean, busiest first
    calls: int  # all-to-all calls per rank (the most any rank recorded)
    unmapped: int  # calls left out of the matrix, summed over ranks


def _ints(text: str) -> list[int] | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # hostile nesting in a trace string
        return None
    if isinstance(value, list) and all(type(v) is int and v >= 0 for v in value):
        return value
    return None


def _splits(text: str) -> tuple[bool, list[int] | None]:
    """(readable, rows per peer); an absent or empty list is readable: an even split."""
    if text in ("", "[]"):
        return True, None
    value = _ints(text)
    return value is not None, value


def _json(trace: Trace, sid: int) -> Any:
    if sid < 0:
        return None
    try:
        return json.loads(trace.name(sid))
    except (ValueError, RecursionError):  # hostile nesting in a trace string
        return None


class _Acc:
    def __init__(self) -> None:
        self.peers: list[int] = []  # one entry per (call, peer): indexes sent and received
        self.sent: list[int] = []
        self.received: list[int] = []
        self.calls = 0
        self.unmapped = 0

    def add(self, group: Sequence[int] | None, send: Sequence[int], recv: Sequence[int]) -> None:
        self.calls += 1
        if group is None or len(group) != len(send) or len(group) != len(recv):
            self.unmapped += 1
            return
        self.peers += group
        self.sent += send
        self.received += recv

    def result(self) -> RankAllToAll | None:
        if not self.calls:
            return None
        peers, at = np.unique(np.array(self.peers, dtype=np.int64), return_inverse=True)
        sent = np.zeros(len(peers), dtype=np.int64)
        received = np.zeros(len(peers), dtype=np.int64)
        np.add.at(sent, at.reshape(-1), np.array(self.sent, dtype=np.int64))
        np.add.at(received, at.reshape(-1), np.array(self.received, dtype=np.int64))
        return RankAllToAll(self.calls, peers, sent, received, self.unmapped)


def _split_bytes(splits: list[int] | None, nelems: int, esize: int, group: int) -> list[int] | None:
    """Bytes per peer from rows per peer and the message's elements; even split if none."""
    if nelems < 0 or esize <= 0:
        return None
    if not splits:
        if group <= 0:
            return None
        return [nelems // group * esize] * group
    rows = sum(splits)
    if rows <= 0 or nelems % rows:
        return None if rows > 0 else [0] * len(splits)
    return [s * (nelems // rows) * esize for s in splits]


def _is_param_comms(name: str) -> bool:
    return name == "record_param_comms"


def _is_all_to_all(name: str) -> bool:
    return name.startswith("alltoall")


def _is_c10d_all_to_all(name: str) -> bool:
    return name in (_C10D_BASE, _C10D_LIST)


def _world_group(n: int, world: int | None) -> list[int] | None:
    return list(range(n)) if world is not None and n == world else None


def _from_param_comms(trace: Trace, acc: _Acc) -> None:
    from stepscope.analysis.distributed.rank import dtype_bytes

    c = trace.collectives
    # string masks, not a name lookup per collective: only the all-to-all calls are visited
    picked = ((c.on_device == 0) & (c.name >= 0) & (c.collective >= 0)
              & trace.string_ids(_is_param_comms)[c.name]
              & trace.string_ids(_is_all_to_all)[c.collective])
    for i in np.flatnonzero(picked).tolist():
        esize = dtype_bytes(trace.name(int(c.dtype[i])))
        ranks = _ints(trace.name(int(c.pg_ranks[i]))) if c.pg_ranks[i] >= 0 else None
        n = len(ranks) if ranks else int(c.group_size[i])
        group = ranks or _world_group(n, trace.meta.world_size)
        in_ok, ins = _splits(trace.name(int(c.in_splits[i])))
        out_ok, outs = _splits(trace.name(int(c.out_splits[i])))
        send = _split_bytes(ins, int(c.in_nelems[i]), esize, n)
        recv = _split_bytes(outs, int(c.out_nelems[i]), esize, n)
        if send is None or recv is None or not in_ok or not out_ok:
            acc.calls += 1
            acc.unmapped += 1
            continue
        acc.add(group, send, recv)


def _numel(dims: Any) -> int:
    if isinstance(dims, list) and all(type(d) is int for d in dims):
        return int(np.prod(dims, dtype=np.int64)) if dims else 1
    return -1


def _from_c10d(trace: Trace, acc: _Acc) -> None:
    """gloo (any backend): the dispatcher ops' concrete inputs and input dims."""
    from stepscope.analysis.distributed.rank import dtype_bytes

    h = trace.host
    world = trace.meta.world_size
    # a string mask, not a name lookup per host operator: only the c10d all-to-all ops are visited
    picked = (h.kind == HOST_OP) & (h.name >= 0) & trace.string_ids(_is_c10d_all_to_all)[h.name]
    for i in np.flatnonzero(picked).tolist():
        name = trace.name(int(h.name[i]))
        dims = _json(trace, int(h.input_dims[i]))
        types = _json(trace, int(h.input_types[i]))
        if not isinstance(dims, list) or len(dims) < 2 or not isinstance(types, list) or not types:
            acc.calls += 1
            acc.unmapped += 1
            continue
        esize = dtype_bytes(str(types[0]))
        if name == _C10D_LIST:  # (outputs[], inputs[], ...): one tensor per peer
            outs, ins = dims[0], dims[1]
            send = [_numel(d) * esize for d in ins] if isinstance(ins, list) else []
            recv = [_numel(d) * esize for d in outs] if isinstance(outs, list) else []
            ok = bool(send) and esize > 0 and min(send + recv, default=-1) >= 0
        else:  # (output, input, group, output_split_sizes, input_split_sizes, ...)
            concrete = _json(trace, int(h.concrete_inputs[i]))
            listed = isinstance(concrete, list) and len(concrete) > 4 \
                and isinstance(concrete[3], str) and isinstance(concrete[4], str)
            out_ok, out_splits = _splits(concrete[3]) if listed else (False, None)
            in_ok, in_splits = _splits(concrete[4]) if listed else (False, None)
            n = len(in_splits) if in_splits else (world or 0)
            s = _split_bytes(in_splits, _numel(dims[1]), esize, n)
            r = _split_bytes(out_splits, _numel(dims[0]), esize, n)
            send, recv = s or [], r or []
            ok = s is not None and r is not None and in_ok and out_ok
        if not ok:
            acc.calls += 1
            acc.unmapped += 1
            continue
        acc.add(_world_group(len(send), world), send, recv)


def rank_all_to_all(trace: Trace) -> RankAllToAll | None:
    """This rank's all-to-all traffic; None when it made no all-to-all call."""
    acc = _Acc()
    _from_param_comms(trace, acc)
    if not acc.calls:  # record_param_comms and the c10d op describe the same call
        _from_c10d(trace, acc)
    return acc.result()


def reduce_all_to_all(ranked: Sequence[tuple[int, RankSummary]]) -> AllToAll | None:
    """The run's traffic matrix from each rank's row; None when no rank called all-to-all."""
    parts = [(r, s.all_to_all) for r, s in ranked if s.all_to_all is not None]
    if not parts:
        return None
    ranks = np.array(sorted({r for r, _ in ranked}), dtype=np.int64)
    n = len(ranks)
    full = n <= MAX_MATRIX_RANKS
    matrix = np.zeros((n, n) if full else (0, 0), dtype=np.int64)
    sent = np.zeros(n, dtype=np.int64)
    received = np.zeros(n, dtype=np.int64)
    for r, a in parts:
        cols = np.searchsorted(ranks, a.peers)
        known = (cols < n) & (ranks[np.minimum(cols, n - 1)] == a.peers)
        row = int(np.searchsorted(ranks, r))
        if full:
            matrix[row, cols[known]] += a.sent[known]
        sent[row] += int(a.sent[known].sum())
        np.add.at(received, cols[known], a.sent[known])
    calls = max(a.calls for _, a in parts)
    unmapped = sum(a.unmapped for _, a in parts)
    if not sent.any():  # no call could be placed: no rank x rank picture to show
        empty = np.zeros(0, dtype=np.int64)
        return AllToAll((), np.zeros((0, 0), dtype=np.int64), empty, empty, 1.0, (), calls,
                        unmapped)
    mean = float(received.mean()) if n else 0.0
    imbalance = float(received.max()) / mean if mean > 0 else 1.0
    order = np.argsort(-received, kind="stable")
    hot = tuple(int(ranks[k]) for k in order.tolist()
                if mean > 0 and received[k] >= HOT_RATIO * mean)
    return AllToAll(
        ranks=tuple(int(r) for r in ranks.tolist()), matrix=matrix, sent=sent,
        received=received, imbalance=imbalance, hot_ranks=hot, calls=calls, unmapped=unmapped,
    )
