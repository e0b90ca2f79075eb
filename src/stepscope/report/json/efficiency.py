"""The ``efficiency`` key of the JSON report (docs/report-json.md): peaks, MFU, roofline."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.efficiency.roofline import Efficiency, WorkRow
from stepscope.report.json.rounding import r as _r


def _row(r: WorkRow) -> dict[str, Any]:
    return {
        "name": r.name,
        "family": r.family,
        "dtype": r.dtype,
        "calls": r.calls,
        "time_us": round(r.time_ns / 1000.0, 3),
        "gflop": round(r.flops / 1e9, 6),
        "mbytes": round(r.bytes / 1e6, 6),
        "tflops_per_s": round(r.tflops_s, 4),
        "gbytes_per_s": round(r.gbps, 3),
        "intensity_flop_per_byte": _r(r.intensity, 3),
        "pct_peak_flops": _r(r.pct_peak_flops),
        "pct_peak_bandwidth": _r(r.pct_peak_bw),
        "pct_roofline": _r(r.pct_roofline),
        "bound": r.bound,
        "above_roof": r.above_roof,  # null, or why the point sits above its roof
    }


def efficiency_json(e: Efficiency | None) -> dict[str, Any] | None:
    """None when the trace has no recorded operator inputs (record_shapes=False)."""
    if e is None:
        return None
    mfu, hfu = e.mfu()
    return {
        "devices": [
            {
                "device": d.device,
                "name": d.name,
                "peak_match": d.match,
                "matched_by": d.how,
                "source": d.source,
                "peak_tflops": d.tflops,
                "peak_gbytes_per_s": d.gbps,
                "note": d.note,
            }
            for d in e.devices
        ],
        "mfu_dtype": e.mfu_dtype or None,  # no dtype known: null, never ""
        "mfu_pct": _r(mfu, 3),
        "hfu_pct": _r(hfu, 3),
        "steps": [
            {
                "step": s.step,
                "device": s.device,
                "duration_us": round(s.duration_ns / 1000.0, 3),
                "model_gflop": round(s.model_flops / 1e9, 6),
                "hardware_gflop": round(s.hardware_flops / 1e9, 6),
                "peak_tflops": s.peak_tflops,
                "mfu_pct": _r(s.mfu_pct, 3),
                "hfu_pct": _r(s.hfu_pct, 3),
            }
            for s in e.steps
        ],
        "total_gflop": round(e.total_flops / 1e9, 6),
        "total_mbytes": round(e.total_bytes / 1e6, 6),
        "recomputed_gflop": round(e.recomputed_flops / 1e9, 6),
        "time_us": round(e.time_ns / 1000.0, 3),
        "modelled_time_pct": _r(100.0 * e.modelled_ns / e.time_ns if e.time_ns else None),
        "time_by_family_us": {k: round(v / 1000.0, 3) for k, v in
                              sorted(e.time_by_family.items(), key=lambda kv: -kv[1])},
        "fp32_matmul_us": round(e.fp32_matmul_ns / 1000.0, 3),
        "bytes_capped_operators": e.capped,
        "flops_capped_operators": e.flops_capped,
        "timed_on": "device" if e.on_gpu else "host",
        "operators": [_row(r) for r in e.operators],
        "kernels": [_row(r) for r in e.kernels],
        "no_model": [
            {"name": r.name, "calls": r.calls, "time_us": round(r.time_ns / 1000.0, 3)}
            for r in e.no_model
        ],
        "matmul_shapes": [
            {"op": m.op, "m": m.m, "n": m.n, "k": m.k, "dtype": m.dtype, "calls": m.calls,
             "time_us": round(m.time_ns / 1000.0, 3)}
            for m in e.matmul_shapes
        ],
    }
