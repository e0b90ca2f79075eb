"""JSON of the issue-9 analyses: warm-up, clock skew, communication, graphs, reader notes.

Kept out of build.py so the report's main layout stays one readable function; build.py
merges these top-level keys into ``Report.to_json()`` (documented in docs/report-json.md).
"""

from __future__ import annotations

from typing import Any

from stepscope.advice import CAPTURE_ONLY_REASON
from stepscope.analysis.events.clock_skew import AFFECTED, SKEW_TOLERANCE_NS
from stepscope.analysis.events.warmup import WARMUP_MIN_NS
from stepscope.analysis.suite import Analyses
from stepscope.model.trace import Trace
from stepscope.report.json.rounding import us as _us


def matrix_core_label(vendor: str) -> str:
    """What the Tensor Core figure is called: AMD's are matrix cores (MFMA/WMMA), Intel's
    XMX engines."""
    return "Tensor/matrix core share" if vendor in ("amd", "intel") else "Tensor Core share"


ONE_SIDE_PCT = 25.0  # part of the window only the host or only the device side covers


def coverage_note(trace: Trace) -> str | None:
    """Which part of the window the host events and the device work each cover, when a
    quarter of it or more is covered by one side only (host events that end before the
    device work starts: graph replays, a capture cut short; or long host-only set-up)."""
    h, rt, d = trace.host, trace.runtime, trace.device
    if not len(d) or not (len(h) or len(rt)):
        return None
    h_lo = min(int(x.min()) for x in (h.ts, rt.ts) if len(x))
    h_hi = max(int(x.max()) for x in (h.end, rt.end) if len(x))
    d_lo, d_hi = int(d.ts.min()), int(d.end.max())
    lo, hi = min(h_lo, d_lo), max(h_hi, d_hi)
    window = hi - lo
    overlap = max(0, min(h_hi, d_hi) - max(h_lo, d_lo))
    if window <= 0 or 100.0 * (window - overlap) / window < ONE_SIDE_PCT:
        return None

    def ms(t: int) -> str:
        return f"{(t - lo) / 1e6:,.1f}"

    text = (f"host events cover {ms(h_lo)}-{ms(h_hi)} ms and device work {ms(d_lo)}-"
            f"{ms(d_hi)} ms of the {window / 1e6:,.1f} ms window")
    if h_hi < d_lo or d_hi < h_lo:
        gap = max(d_lo - h_hi, h_lo - d_hi)
        return (f"{text}: they do not overlap, and the {gap / 1e6:,.1f} ms in between has "
                "neither (counted as Other in the breakdown)")
    return f"{text}: {100.0 * (window - overlap) / window:.0f} % of it has one side only"


def attribution_note(a: Analyses) -> str | None:
    """How runtime calls were tied to operators, when External ids alone did not do it."""
    at = a.links.attribution
    if at.by_nesting == 0 and at.rejected == 0:
        return None
    parts = []
    if at.by_external_id:
        parts.append(f"{at.by_external_id:,} by External id")
    parts.append(f"{at.by_nesting:,} by time nesting (innermost enclosing operator)")
    if at.unowned:
        parts.append(f"{at.unowned:,} outside every operator")
    why = ("the trace writes each call's own correlation id as its External id (a PyTorch "
           "2.0-2.1 trait), so External ids name no operator" if at.self_ids else
           "time nesting where the External id names no range that encloses the call")
    if at.rejected:
        why += f"; {at.rejected:,} External ids named a range that does not enclose the call"
    return (f"launches tied to operators ({at.method}): {', '.join(parts)} of {at.calls:,} "
            f"runtime calls; {why}")


def real_trace_json(a: Analyses) -> dict[str, Any]:
    meta = a.trace.meta
    w, sk, c, g = a.warmup, a.clock_skew, a.communication, a.graphs
    notes = list(meta.notes)
    trace = a.trace
    if not len(trace.device) and len(trace.runtime):
        notes.append("runtime calls but no device activity recorded (GPU activities not "
                     "profiled?): the report covers the host side only")
    elif not len(trace.device) and not len(trace.runtime) and len(trace.host):
        notes.append("CPU operators only (no runtime calls, no device work): a CPU profile")
    elif not len(trace.device) and not len(trace.runtime):
        notes.append("no events at all: the trace recorded nothing to analyse (an empty "
                     "capture or export)")
    for note in (attribution_note(a), coverage_note(trace)):
        if note:
            notes.append(note)
    if g is not None and g.capture_only:
        notes.append(CAPTURE_ONLY_REASON)
    return {
        "notes": notes,
        "tensor_core_metric": matrix_core_label(meta.vendor),
        "warmup": None if w is None else {
            "start_us": _us(w.start),
            "duration_us": _us(w.duration),
            "pct_of_window": round(w.pct_of_window, 2),
            "stall_us": _us(w.stall_ns),
            "calls": list(w.calls),
            "excluded_steps": list(w.dropped_steps),
            "threshold_us": _us(WARMUP_MIN_NS),
            "note": "excluded from the step breakdown, GPU metrics and advice (steady state)",
        },
        "clock_skew": None if sk is None else {
            "skewed_ops": sk.skewed_ops,
            "checked_ops": sk.checked_ops,
            "max_us": _us(sk.max_ns),
            "median_us": _us(sk.median_ns),
            "tolerance_us": _us(SKEW_TOLERANCE_NS),
            "affected": list(AFFECTED),
            "warning": sk.warning(),
        },
        "communication": None if c is None else {
            "device": c.device,
            "kernel_us": _us(c.kernel_ns),
            "share_of_kernel_time_pct": round(c.share_pct, 2),
            "per_step_us": _us(c.comm_per_step_ns),
            "exposed_per_step_us": _us(c.exposed_per_step_ns),
            "exposed_pct_of_step": round(c.exposed_pct, 2),
            "overlap_pct": round(c.overlap_pct, 2),
            "top": [
                {"name": k.name, "family": k.family, "calls": k.calls,
                 "total_us": _us(k.total_ns)}
                for k in c.top
            ],
        },
        "graphs": None if g is None else {
            "graph_launches": g.graph_launches,
            "graph_kernels": g.graph_kernels,
            "kernels_per_graph": round(g.kernels_per_graph, 2),
            "capture_calls": g.capture_calls,
            "capture_only": g.capture_only,
            "operators": [{"name": n, "graph_launches": c} for n, c in g.operators],
        },
    }
