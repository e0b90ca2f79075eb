"""The ``distributed`` JSON section (docs/report-json.md): a run's view or one rank's part."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.distributed.collectives import GroupTable
from stepscope.analysis.distributed.pipeline import Pipeline
from stepscope.analysis.distributed.rank import RankSummary
from stepscope.analysis.distributed.run import Distributed
from stepscope.report.json.parallelism import all_to_all_json, fsdp_json
from stepscope.report.json.rounding import r as _r
from stepscope.report.json.rounding import us as _us


def distributed_json(d: Distributed) -> dict[str, Any]:
    return {
        "world_size": d.world_size,
        "backend": d.backend,
        "rank_source": d.rank_source,
        "ranks": [
            {
                "rank": r.rank, "path": r.path, "steps": r.steps,
                "computation_us": _us(r.computation_ns), "overlap_us": _us(r.overlap_ns),
                "communication_us": _us(r.communication_ns), "other_us": _us(r.other_ns),
                "sync_us": _us(r.sync_ns), "transfer_us": _us(r.transfer_ns),
                "comm_overlap_pct": _r(r.comm_overlap_pct),
                "per_step": [
                    {"step": st.step, "computation_us": _us(st.computation_ns),
                     "overlap_us": _us(st.overlap_ns),
                     "communication_us": _us(st.communication_ns), "other_us": _us(st.other_ns),
                     "sync_us": _us(st.sync_ns), "transfer_us": _us(st.transfer_ns)}
                    for st in r.per_step
                ],
            }
            for r in d.ranks
        ],
        "stragglers": [
            {
                "rank": s.rank, "wait_caused_us": _us(s.wait_caused_ns),
                "last_arrivals": s.last_arrivals, "matched_calls": s.matched_calls,
                "computation_us": _us(s.computation_ns),
                "computation_excess_us": _us(s.computation_excess_ns),
                "share_pct": _r(s.share_pct),
                "slower_ops": [{"name": n, "excess_us": _us(ns)} for n, ns in s.slower_ops],
            }
            for s in d.stragglers
        ],
        "collectives": [
            {
                "collective": c.collective, "process_group": c.pg, "group_size": c.group_size,
                "calls": c.calls, "ranks": c.ranks, "bytes_per_call": _r(c.bytes_per_call, 1),
                "dtype": c.dtype, "time_us": _us(c.time_ns), "transfer_us": _us(c.transfer_ns),
                "algbw_gbps": _r(c.algbw_gbps, 4), "busbw_gbps": _r(c.busbw_gbps, 4),
                "link_peak_pct": _r(c.link_peak_pct),
            }
            for c in d.collectives
        ],
        "steps": [
            {"step": s.step, "last_rank": s.last_rank, "wait_us": _us(s.wait_ns)}
            for s in d.steps
        ],
        "calls": [
            {"collective": c.collective, "process_group": c.pg, "seq": c.seq, "step": c.step,
             "ranks": c.ranks, "bytes": c.nbytes, "last_rank": c.last_rank,
             "wait_us": _us(c.wait_ns), "max_wait_us": _us(c.max_wait_ns),
             "transfer_us": _us(c.transfer_ns)}
            for c in d.calls
        ],
        "imbalance": {
            "computation_max_us": _us(d.imbalance.computation_max_ns),
            "computation_min_us": _us(d.imbalance.computation_min_ns),
            "computation_mean_us": _us(d.imbalance.computation_mean_ns),
            "max_over_mean": _r(d.imbalance.max_over_mean, 3),
            "slowest_rank": d.imbalance.slowest_rank,
        },
        "unmatched_calls": d.unmatched_calls,
        "failed": list(d.failed),
        "all_to_all": all_to_all_json(d.all_to_all),
        "fsdp": fsdp_json(d.fsdp),
        "matched_by": d.matched_by,
        "matching_note": d.matching_note or None,
        "groups": [_group(g) for g in d.groups],
        "pipeline": None if d.pipeline is None else pipeline_json(d.pipeline),
    }


def _group(g: GroupTable) -> dict[str, Any]:
    waits = g.wait_ns
    return {
        "process_group": g.pg, "ranks": list(g.ranks),
        "wait_us": [_us(waits[r]) for r in g.ranks],
        "calls": [
            {"name": c.name, "seq": c.seq, "ranks": list(c.ranks), "bytes": c.nbytes,
             "transfer_us": _us(c.transfer_ns), "skew_us": _us(c.skew_ns),
             "wait_us": [_us(w) for w in c.wait_ns],
             "algbw_gbps": _r(c.algbw_gbps, 4), "busbw_gbps": _r(c.busbw_gbps, 4)}
            for c in g.calls
        ],
    }


def pipeline_json(p: Pipeline) -> dict[str, Any]:
    def per_mb(ns: float) -> float | None:
        v = p.per_microbatch(ns)
        return None if v is None else _us(v)

    return {
        "stages": [
            {"stage": s.stage, "ranks": list(s.ranks), "bubble_pct": _r(s.bubble_pct),
             "forward_us_per_microbatch": per_mb(s.forward_ns),
             "backward_us_per_microbatch": per_mb(s.backward_ns),
             "compute_us": _us(s.compute_ns), "idle_us": _us(s.idle_ns), "step_us": _us(s.step_ns)}
            for s in p.stages
        ],
        "microbatches": p.microbatches, "microbatches_from": p.microbatches_from or None,
        "schedule": p.schedule, "theoretical_bubble_pct": _r(p.theoretical_bubble_pct),
        "imbalance": _r(p.imbalance, 3), "stages_per_rank": p.stages_per_rank,
    }


def rank_part_json(s: RankSummary) -> dict[str, Any]:
    """One trace of a distributed job: its own rank's part (no cross-rank figures)."""
    return {
        "rank": s.rank, "world_size": s.world_size, "backend": s.backend,
        "on_device": s.on_device,
        "computation_us": _us(s.total("computation_ns")), "overlap_us": _us(s.total("overlap_ns")),
        "communication_us": _us(s.total("communication_ns")),
        "other_us": _us(s.total("other_ns")), "comm_overlap_pct": _r(s.comm_overlap_pct),
        "steps": [
            {"step": st.step, "computation_us": _us(st.computation_ns),
             "overlap_us": _us(st.overlap_ns), "communication_us": _us(st.communication_ns),
             "other_us": _us(st.other_ns)}
            for st in s.steps
        ],
        "calls": len(s.calls),
        "bytes": sum(c.nbytes for c in s.calls if c.nbytes > 0),
    }
