"""Links between event families: device op -> runtime call (correlation id) -> host op
(External id where it names an enclosing range, else time nesting on the call's thread).
Vectorised joins via sorted keys and searchsorted."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.events.intervals import nest_sorted
from stepscope.classify import names
from stepscope.model.trace import HOST_OP, HOST_PYTHON, Trace

I64 = npt.NDArray[np.int64]


def gather(values: npt.NDArray[Any], index: I64, fill: Any) -> npt.NDArray[Any]:
    """``values[index]`` where ``index >= 0``, ``fill`` elsewhere; safe for empty ``values``.

    (``values[np.maximum(index, 0)]`` raises on an empty table, e.g. a trace with kernels
    but no runtime calls.)
    """
    dtype = np.result_type(values.dtype, np.min_scalar_type(fill))
    out = np.full(len(index), fill, dtype=dtype)
    ok = (index >= 0) & (index < len(values))
    out[ok] = values[index[ok]]
    return out


def lookup(keys: I64, table_keys: I64) -> I64:
    """Index into ``table_keys`` of each key (first match), -1 when absent or key < 0."""
    if len(table_keys) == 0 or len(keys) == 0:
        return np.full(len(keys), -1, dtype=np.int64)
    order = np.argsort(table_keys, kind="stable")
    sorted_keys = table_keys[order]
    pos = np.searchsorted(sorted_keys, keys, side="left")
    pos_c = np.minimum(pos, len(sorted_keys) - 1)
    found = (pos < len(sorted_keys)) & (sorted_keys[pos_c] == keys) & (keys >= 0)
    return np.where(found, order[pos_c], -1).astype(np.int64)


GRAPH_LAUNCH_CALLS = frozenset({"cudaGraphLaunch", "cuGraphLaunch", "hipGraphLaunch",
                                "cudaGraphLaunch_v10000", "cuGraphLaunch_ptsz"})


def is_graph_launch(name: str) -> bool:
    return name in GRAPH_LAUNCH_CALLS


_NOT_OPERATORS = ("DataParallel.forward", "DistributedDataParallel.forward")


def not_an_operator(name: str) -> bool:
    """Host ranges that are never operator rows (their time shows in their children), and
    never a launcher: ProfilerStep#N (a cpu_op in PyTorch 1.x), DataLoader and optimizer
    ranges, (Distributed)DataParallel.forward."""
    return (
        names.is_profiler_step(name)
        or names.is_dataloader(name)
        or names.is_optimizer(name)
        or name in _NOT_OPERATORS
    )


def enclosing_ops(trace: Trace, calls: I64) -> I64:
    """For runtime calls ``calls``, the innermost host *operator* on the same thread whose
    range encloses the call (starts at or before it, ends at or after it), -1 when none.

    Operators are ``cpu_op`` rows (HOST_OP) other than :func:`not_an_operator`; user
    annotations (record_function, ProfilerStep#N in 2.x) and Python frames are skipped, so
    a call outside every operator is not charged to the step or annotation around it.
    One pass per thread: the candidate that started last at or before the call, then up
    its chain of enclosing operators (one vectorised step per nesting level) to the first
    that is still open when the call ends.
    """
    host, rt = trace.host, trace.runtime
    owner = np.full(len(calls), -1, dtype=np.int64)
    if len(calls) == 0:
        return owner
    ops = np.flatnonzero((host.kind == HOST_OP) & ~trace.string_ids(not_an_operator)[host.name])
    call_tid = rt.tid[calls]
    for tid in np.unique(call_tid).tolist():
        sub = np.flatnonzero(call_tid == tid)
        cand = ops[host.tid[ops] == tid]
        if len(cand) == 0:
            continue
        cand = cand[np.lexsort((-host.end[cand], host.ts[cand]))]
        cts, cend = host.ts[cand], host.end[cand]
        _, up = nest_sorted(cts, cend)
        q = calls[sub]
        k = np.searchsorted(cts, rt.ts[q], side="right") - 1
        qend = rt.end[q]
        while True:  # at most the nesting depth
            bad = (k >= 0) & (cend[np.maximum(k, 0)] < qend)
            if not bad.any():
                break
            k = np.where(bad, up[np.maximum(k, 0)], k)
        found = k >= 0
        owner[sub[found]] = cand[k[found]]
    return owner


SELF_ID_SHARE = 0.5  # runtime calls whose External id is their own correlation id


@dataclass(frozen=True)
class Attribution:
    """How runtime calls were tied to host operators (the report's notes say it)."""

    calls: int
    by_external_id: int  # External id names a host range that encloses the call
    by_nesting: int  # tied by time nesting (External id absent, foreign or not enclosing)
    rejected: int  # External id named a host range that does not enclose the call
    unowned: int  # neither: no operator around the call
    self_ids: bool  # the trace writes each call's own correlation id as its External id

    @property
    def method(self) -> str:
        if self.by_nesting == 0:
            return "external id"
        if self.by_external_id == 0:
            return "time nesting"
        return "external id and time nesting"


@dataclass(frozen=True)
class Links:
    trace: Trace

    @cached_property
    def device_runtime(self) -> I64:
        """For each device op, the index of the runtime call that launched it (or -1)."""
        return lookup(self.trace.device.correlation, self.trace.runtime.correlation)

    @cached_property
    def _runtime_host(self) -> tuple[I64, Attribution]:
        trace = self.trace
        host, rt = trace.host, trace.runtime
        n = len(rt)
        # PyTorch 2.0-2.1 era traces write each call's own correlation id as its External
        # id (a CUPTI/Kineto trait): then no External id is evidence, even where it
        # happens to equal some host op's; decided per trace
        self_ids = n > 0 and float(np.mean(rt.external_id == rt.correlation)) > SELF_ID_SHARE
        owner = np.full(n, -1, dtype=np.int64)
        if not self_ids:
            candidates = np.flatnonzero((host.kind != HOST_PYTHON) & (host.external_id > 0))
            idx = lookup(rt.external_id, host.external_id[candidates])
            owner = gather(candidates, idx, -1)
        named = owner >= 0
        # per event: the named range must enclose the call on its thread
        encloses = (named & (gather(host.tid, owner, -1) == rt.tid)
                    & (gather(host.ts, owner, 0) <= rt.ts) & (gather(host.end, owner, 0) >= rt.end))
        owner[~encloses] = -1
        rest = np.flatnonzero(~encloses)
        nested = enclosing_ops(trace, rest)
        owner[rest] = nested
        by_nesting = int((nested >= 0).sum())
        return owner, Attribution(
            calls=n, by_external_id=int(encloses.sum()), by_nesting=by_nesting,
            rejected=int((named & ~encloses).sum()), unowned=len(rest) - by_nesting,
            self_ids=self_ids)

    @property
    def runtime_host(self) -> I64:
        """For each runtime call, the host range that launched it (or -1): the one its
        External id names when that range encloses the call on its thread (Kineto's id of
        the innermost RecordFunction open at the call), else the innermost enclosing
        operator (:func:`enclosing_ops`). Graph launches carry their own correlation id
        as External id, and PyTorch 2.0-2.1 era traces do so for every call."""
        return self._runtime_host[0]

    @property
    def attribution(self) -> Attribution:
        return self._runtime_host[1]

    @cached_property
    def device_host(self) -> I64:
        """For each device op, the host op that launched it (through its runtime), or -1."""
        rt = self.device_runtime
        return gather(self.runtime_host, rt, -1)
