"""The ``nsys`` section of the JSON report (docs/report-json.md): the nsys stats
summaries and the NVTX ranges, for Nsight Systems exports; None for other traces."""

from __future__ import annotations

from typing import Any

import numpy as np

from stepscope.analysis.nsight.stats import ProjRow, StatRow
from stepscope.analysis.suite import Analyses

NVTX_RANGES_MAX = 5000  # ranges listed for the NVTX view (longest first beyond this)


def _stat(r: StatRow, unit: str = "ns", label: str = "name") -> dict[str, Any]:
    out: dict[str, Any] = {label: r.name}
    if unit == "ns":
        out["time_pct"] = round(r.time_pct, 3)
    out.update({
        f"total_{unit}": r.total, "count": r.count, f"avg_{unit}": round(r.avg, 3),
        f"med_{unit}": round(r.med, 3), f"min_{unit}": r.min, f"max_{unit}": r.max,
        f"stddev_{unit}": round(r.stddev, 3),
    })
    if r.style is not None:
        out["style"] = r.style
    if r.mangled is not None:
        out["mangled"] = r.mangled
    return out


def _proj(r: ProjRow) -> dict[str, Any]:
    return {
        "name": r.name, "style": r.style, "total_proj_ns": r.total_proj_ns,
        "total_range_ns": r.total_range_ns, "instances": r.instances,
        "proj_avg_ns": round(r.proj_avg_ns, 3), "proj_med_ns": round(r.proj_med_ns, 3),
        "proj_min_ns": r.proj_min_ns, "proj_max_ns": r.proj_max_ns,
        "proj_stddev_ns": round(r.proj_stddev_ns, 3), "total_gpu_ops": r.total_gpu_ops,
        "avg_gpu_ops": round(r.avg_gpu_ops, 3), "avg_range_lvl": round(r.avg_range_lvl, 3),
        "avg_num_child": round(r.avg_num_child, 3),
    }


def _ranges(a: Analyses) -> list[dict[str, Any]]:
    trace = a.trace
    nv = trace.nvtx
    idx = np.arange(len(nv))
    if len(idx) > NVTX_RANGES_MAX:
        idx = np.sort(np.argsort(-nv.dur, kind="stable")[:NVTX_RANGES_MAX])
    return [
        {
            "name": trace.name(int(nv.name[i])),
            "domain": trace.name(int(nv.domain[i])) or None,
            "style": "StartEnd" if nv.style[i] else "PushPop",
            "pid": trace.name(int(nv.pid[i])),
            "tid": trace.name(int(nv.tid[i])),
            "start_ns": int(nv.ts[i]),
            "duration_ns": int(nv.dur[i]),
            "payload": None if np.isnan(nv.payload[i]) else float(nv.payload[i]),
        }
        for i in idx.tolist()
    ]


def nsys_json(a: Analyses, top: int | None = None) -> dict[str, Any] | None:
    s = a.nsys
    if s is None:
        return None
    meta = a.trace.meta
    cut = slice(None) if top is None else slice(0, max(top, 0))
    return {
        "export": {"schema_version": meta.format_version, "producer": meta.producer,
                   "diagnostics": list(meta.diagnostics)},
        "cuda_api_sum": [_stat(r) for r in s.cuda_api_sum[cut]],
        "cuda_gpu_kern_sum": [_stat(r) for r in s.cuda_gpu_kern_sum[cut]],
        "cuda_gpu_mem_time_sum": [_stat(r, label="operation") for r in s.cuda_gpu_mem_time_sum],
        "cuda_gpu_mem_size_sum": [_stat(r, "bytes", "operation")
                                  for r in s.cuda_gpu_mem_size_sum],
        "nvtx_sum": [_stat(r) for r in s.nvtx_sum[cut]],
        "nvtx_gpu_proj_sum": [_proj(r) for r in s.nvtx_gpu_proj_sum[cut]],
        "osrt_sum": [_stat(r) for r in s.osrt_sum[cut]],
        "nccl_sum": [_stat(r) for r in s.nccl_sum[cut]],
        "nvtx_ranges_total": len(a.trace.nvtx),
        "nvtx_ranges": _ranges(a),
    }
