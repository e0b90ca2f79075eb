"""Nsight Compute kernels joined by name to the trace's kernel table.

A kernel ncu profiled is matched to the trace's kernels with the same demangled name, else
with the same base name (no ``void``, parameters, template arguments or namespaces: ncu
prints base names by default). The estimated saving of a kernel is its total time in the
trace times the largest *global* speedup ncu's rules estimate for it (rules overlap, so
they are not added up).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from stepscope.model.ncu import NcuKernel, NcuReport
from stepscope.model.trace import DEV_KERNEL, Trace

_PARAMS = re.compile(r"\([^()]*\)\s*$")


def base_name(name: str) -> str:
    """``void ns::f<int>(float*)`` -> ``f``."""
    n = name.strip().removeprefix("void ")
    while True:
        m = _PARAMS.search(n)
        if not m:
            break
        n = n[: m.start()]
    depth = 0
    out = []
    for ch in n:
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth = max(depth - 1, 0)
        elif depth == 0:
            out.append(ch)
    flat = "".join(out)
    return flat.rsplit("::", 1)[-1].strip()


@dataclass(frozen=True)
class NcuRow:
    kernel: NcuKernel
    trace_name: str | None  # the matched kernel of the trace
    trace_calls: int
    trace_total_ns: int
    best_speedup_pct: float | None
    estimated_saving_ns: float


@dataclass(frozen=True)
class NcuJoin:
    report: NcuReport
    rows: tuple[NcuRow, ...]
    matched: int


def join_ncu(report: NcuReport, trace: Trace | None) -> NcuJoin:
    totals: dict[str, tuple[str, int, int]] = {}
    by_base: dict[str, tuple[str, int, int]] = {}
    if trace is not None:
        dev = trace.device
        sel = dev.kind == DEV_KERNEL
        ids, inv = np.unique(dev.name[sel], return_inverse=True)
        calls = np.bincount(inv.reshape(-1), minlength=len(ids))
        total = np.bincount(inv.reshape(-1), weights=dev.dur[sel].astype(np.float64),
                            minlength=len(ids))
        for i, nid in enumerate(ids.tolist()):
            name = trace.name(int(nid))
            entry = (name, int(calls[i]), int(total[i]))
            totals[name] = entry
            b = base_name(name)
            prev = by_base.get(b)
            if prev is None:
                by_base[b] = entry
            else:  # several template instances: add them up under the base name
                by_base[b] = (prev[0], prev[1] + entry[1], prev[2] + entry[2])
    rows = []
    for k in report.kernels:
        hit = totals.get(k.name) or by_base.get(base_name(k.name))
        # "global" estimates are relative to the kernel's whole duration ("local" ones to
        # one section's scope), so only they translate into kernel time
        speedups = [r.speedup_pct for r in k.rules
                    if r.speedup_pct is not None and r.speedup_type in (None, "global")]
        best = max(speedups) if speedups else None
        total_ns = hit[2] if hit else 0
        rows.append(NcuRow(
            kernel=k, trace_name=hit[0] if hit else None, trace_calls=hit[1] if hit else 0,
            trace_total_ns=total_ns, best_speedup_pct=best,
            estimated_saving_ns=total_ns * (best or 0.0) / 100.0))
    return NcuJoin(report=report, rows=tuple(rows),
                   matched=sum(1 for r in rows if r.trace_name is not None))
