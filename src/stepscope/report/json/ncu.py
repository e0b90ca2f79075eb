"""The ``ncu`` section of the JSON report (docs/report-json.md)."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.nsight.ncu_join import NcuJoin
from stepscope.report.json.rounding import r as _r


def ncu_json(join: NcuJoin | None) -> dict[str, Any] | None:
    if join is None:
        return None
    rows = []
    for row in join.rows:
        k = row.kernel
        rows.append({
            "id": k.id, "name": k.name, "block": k.block, "grid": k.grid, "device": k.device,
            "compute_capability": k.compute_capability,
            "duration_ns": _r(k.duration_ns, 1),
            "sm_throughput_pct": _r(k.sm_throughput_pct),
            "memory_throughput_pct": _r(k.memory_throughput_pct),
            "dram_throughput_pct": _r(k.dram_throughput_pct),
            "l1_throughput_pct": _r(k.l1_throughput_pct),
            "l2_throughput_pct": _r(k.l2_throughput_pct),
            "achieved_occupancy_pct": _r(k.achieved_occupancy_pct),
            "theoretical_occupancy_pct": _r(k.theoretical_occupancy_pct),
            "occupancy_limiter": k.occupancy_limiter,
            "registers_per_thread": k.registers_per_thread,
            "shared_memory_bytes": k.shared_memory_bytes,
            "tensor_pipe_pct": _r(k.tensor_pipe_pct),
            "rules": [{"name": r.name, "type": r.type, "section": r.section,
                       "description": r.description, "speedup_type": r.speedup_type,
                       "estimated_speedup_pct": r.speedup_pct} for r in k.rules],
            "trace": None if row.trace_name is None else {
                "name": row.trace_name, "calls": row.trace_calls,
                "total_us": round(row.trace_total_ns / 1000.0, 3)},
            "best_speedup_pct": row.best_speedup_pct,
            "estimated_saving_us": round(row.estimated_saving_ns / 1000.0, 3),
        })
    return {"path": join.report.path, "page": join.report.page,
            "kernels": rows, "matched": join.matched}
