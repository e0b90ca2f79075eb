"""JSON of the memory and module views (the ``memory`` / ``modules`` report sections) and
of the ``stepscope memory`` command's snapshot and timeline results (docs/report-json.md)."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.memory.records import Allocation, MemoryResult
from stepscope.analysis.memory.snapshot import Site, SnapshotResult
from stepscope.analysis.memory.timeline import CategoryTimeline
from stepscope.analysis.trace.modules import ModulesResult, NamedTime
from stepscope.report.json.rounding import us as _us


def _alloc(a: Allocation, origin: int) -> dict[str, Any]:
    life = a.lifetime_ns
    return {
        "size_bytes": a.size,
        "alloc_us": _us(a.alloc_ns - origin),
        "free_us": None if a.free_ns is None else _us(a.free_ns - origin),
        "lifetime_us": None if life is None else _us(life),
        "operator": a.operator,
        "step": a.step,
    }


def memory_json(m: MemoryResult | None, top: int = 20,
                categories: CategoryTimeline | None = None) -> dict[str, Any] | None:
    if m is None:
        return None
    o = m.origin_ns
    return {
        "origin_us": _us(o),
        "categories": None if categories is None else timeline_json(categories),
        "records": m.total_records,
        "attributed_records": m.attributed,
        "note": m.note,
        "devices": [
            {
                "device": d.device,
                "cumulative": d.cumulative,
                "records": d.records,
                "peak_allocated_bytes": d.peak_allocated,
                "peak_reserved_bytes": d.peak_reserved if d.peak_reserved >= 0 else None,
                "peak_us": _us(d.peak_ns - o),
                "peak_step": d.peak_step,
                "peak_operator": d.peak_operator,
                "capacity_bytes": d.capacity,
                "peak_pct_of_capacity": round(100.0 * d.peak_allocated / d.capacity, 2)
                if d.capacity and not d.cumulative else None,
                "curve": {
                    "t_us": [_us(t - o) for t in d.t_ns.tolist()],
                    "allocated_bytes": d.allocated.tolist(),
                    "reserved_bytes": None if d.cumulative else d.reserved.tolist(),
                },
                "step_start_allocated_bytes": [
                    {"step": s, "bytes": b} for s, b in d.step_start_allocated
                ],
                "allocations": {
                    "count": d.allocations,
                    "frees": d.frees,
                    "matched": d.matched,
                    "frees_without_alloc": d.frees_without_alloc,
                    "unfreed_count": d.unfreed_count,
                    "unfreed_bytes": d.unfreed_bytes,
                    "largest": [_alloc(a, o) for a in d.largest],
                    "unfreed": [_alloc(a, o) for a in d.unfreed],
                },
                "operators": [
                    {
                        "name": r.name,
                        "calls": r.calls,
                        "size_increase_bytes": r.size_increase,
                        "self_size_increase_bytes": r.self_size_increase,
                        "allocation_count": r.allocation_count,
                        "self_allocation_count": r.self_allocation_count,
                        "allocation_size_bytes": r.allocation_size,
                        "self_allocation_size_bytes": r.self_allocation_size,
                    }
                    for r in d.operators[:top]
                ],
            }
            for d in m.devices
        ],
    }


def _named(items: tuple[NamedTime, ...]) -> list[dict[str, Any]]:
    return [{"name": x.name, "calls": x.calls, "total_us": _us(x.total_ns)} for x in items]


def modules_json(r: ModulesResult | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {
        "module_events": r.module_events,
        "device_us_in_modules": _us(r.device_ns_in_modules),
        "device_us_total": _us(r.device_ns_total),
        "nodes": [
            {
                "id": n.id,
                "parent": n.parent,
                "name": n.name,
                "path": n.path,
                "depth": n.depth,
                "calls": n.calls,
                "host_total_us": _us(n.host_total_ns),
                "host_self_us": _us(n.host_self_ns),
                "device_total_us": _us(n.device_total_ns),
                "device_self_us": _us(n.device_self_ns),
                "mean_us": _us((n.device_total_ns or n.host_total_ns) / max(n.calls, 1)),
                "max_call_us": _us(n.max_call_ns),
                "operators": _named(n.operators),
                "kernels": _named(n.kernels),
            }
            for n in r.nodes
        ],
    }


def _sites(sites: tuple[Site, ...]) -> list[dict[str, Any]]:
    return [{"site": s.site, "bytes": s.bytes, "blocks": s.blocks} for s in sites]


def snapshot_json(r: SnapshotResult) -> dict[str, Any]:
    return {
        "path": r.path,
        "devices": [
            {
                "device": d.device,
                "segments": d.segments,
                "reserved_bytes": d.reserved,
                "allocated_bytes": d.allocated,
                "active_bytes": d.active,
                "requested_bytes": d.requested,
                "inactive_bytes": d.inactive,
                "fragmentation_pct": round(d.fragmentation_pct, 2),
                "split_inactive_blocks": d.split_inactive_blocks,
                "split_inactive_bytes": d.split_inactive_bytes,
                "largest_inactive_block_bytes": d.largest_inactive_block,
                "expandable_segments": d.expandable_segments,
                "sites": _sites(d.sites),
                "trace_entries": d.trace_entries,
                "actions": d.actions,
                "before_trace_bytes": d.before_trace,
                "peak_allocated_bytes": d.peak_allocated,
                "peak_time_us": d.peak_time_us,
                "peak_sites": _sites(d.peak_sites),
                "ooms": [
                    {"time_us": x.time_us, "requested_bytes": x.requested,
                     "device_free_bytes": x.device_free, "allocated_bytes": x.allocated}
                    for x in d.ooms
                ],
            }
            for d in r.devices
        ],
    }


def timeline_json(c: CategoryTimeline) -> dict[str, Any]:
    o = c.origin_ns
    return {
        "categories": list(c.categories),
        "origin_us": _us(o),
        "t_us": [_us(t - o) for t in c.t_ns.tolist()],
        "bytes": c.sizes.tolist(),
        "peak_bytes": c.peak_bytes,
        "peak_us": _us(c.peak_ns - o),
        "at_peak_bytes": c.at_peak,
        "max_bytes_by_category": c.max_by_category,
    }
