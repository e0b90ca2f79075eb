"""``distributed.all_to_all`` and ``distributed.fsdp`` (docs/report-json.md)."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.distributed.all_to_all import AllToAll
from stepscope.analysis.distributed.fsdp import Fsdp
from stepscope.report.json.rounding import r as _r
from stepscope.report.json.rounding import us as _us


def all_to_all_json(a: AllToAll | None) -> dict[str, Any] | None:
    if a is None:
        return None
    return {
        "ranks": list(a.ranks),
        "matrix_bytes": a.matrix.tolist(),
        "sent_bytes": a.sent.tolist(),
        "received_bytes": a.received.tolist(),
        "imbalance": _r(a.imbalance, 3),
        "hot_ranks": list(a.hot_ranks),
        "calls": a.calls,
        "unmapped_calls": a.unmapped,
    }


def fsdp_json(f: Fsdp | None) -> dict[str, Any] | None:
    if f is None:
        return None
    kinds = ("all_gather", "reduce_scatter")
    return {
        "version": f.version,
        "ranks": f.ranks,
        "computation_us": _us(f.computation_ns),
        **{f"{k}_us": _us(f.total(k, "time_ns")) for k in kinds},
        **{f"{k}_exposed_us": _us(f.total(k, "exposed_ns")) for k in kinds},
        **{f"{k}_overlap_pct": _r(f.overlap_pct(k)) for k in kinds},
        "units": [
            {"unit": u.unit, "kind": u.kind, "calls": _r(u.calls, 2),
             "bytes": _r(u.nbytes, 1), "time_us": _us(u.time_ns),
             "exposed_us": _us(u.exposed_ns), "overlap_pct": _r(u.overlap_pct)}
            for u in f.units
        ],
    }
