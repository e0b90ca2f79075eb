"""Turn a trace, a saved ``stepscope.report/1`` JSON or a folder of traces into a RunSummary.

A trace goes through the same report as ``stepscope report`` (all rows, not the top N),
so a saved report and a fresh trace of the same run summarise identically; a trace
additionally gives every kernel's per-step samples.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from stepscope.analysis.breakdown import CATEGORIES
from stepscope.analysis.diff import FindingSummary, ItemSummary, RunSummary, pool
from stepscope.analysis.step_series import kernel_step_series
from stepscope.errors import TraceFormatError, UsageError
from stepscope.report.build import SCHEMA, build_report

ALL_ROWS = 1 << 30


def _f(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float):
        raise TraceFormatError(f"{where}: expected a number, got {x!r}")
    return float(x)


def _opt(x: Any) -> float | None:
    return None if x is None or isinstance(x, bool) else float(x)


def summary_from_report(
    doc: Any, label: str, *, series: dict[str, tuple[float, ...]] | None = None,
    complete: bool | None = None,
) -> RunSummary:
    """A RunSummary from the JSON of a report (``Report.to_json()`` or a saved file)."""
    if not isinstance(doc, dict):
        raise TraceFormatError(f"{label}: not a stepscope report (expected a JSON object)")
    schema = doc.get("schema")
    if schema != SCHEMA:
        raise TraceFormatError(
            f"{label}: report schema {schema!r} is not supported (expected {SCHEMA!r})"
        )
    try:
        steps = doc["steps"]
        step_us = tuple(_f(s["duration_us"], label) for s in steps)
        cats = {
            c: tuple(_f(s["breakdown_us"].get(c, 0.0), label) for s in steps) for c in CATEGORIES
        }

        def ops(key: str) -> tuple[ItemSummary, ...]:
            return tuple(
                ItemSummary(
                    name=str(o["name"]),
                    calls=int(o["calls"]),
                    host_us=_f(o["host_total_us"], label),
                    device_us=_f(o["device_total_us"], label),
                    shape=o.get("input_shape"),
                )
                for o in doc.get(key, [])
            )

        kernels = tuple(
            ItemSummary(
                name=str(k["name"]),
                calls=int(k["calls"]),
                host_us=0.0,
                device_us=_f(k["total_us"], label),
                per_step=None if series is None else series.get(str(k["name"])),
            )
            for k in doc.get("kernels", [])
        )
        gpu = {
            str(g["device"]): {
                m: _opt(g.get(m))
                for m in (
                    "utilization_pct",
                    "sm_efficiency_pct",
                    "achieved_occupancy_pct",
                    "tensor_core_pct",
                )
            }
            for g in doc.get("gpu", [])
        }
        findings = tuple(
            FindingSummary(
                id=str(f["id"]),
                title=str(f["title"]),
                severity=str(f["severity"]),
                saving_us=_f(f["estimated_saving"]["us_per_step"], label),
            )
            for f in doc.get("findings", [])
        )
        source = doc.get("source", {})
        devices = tuple(str(d.get("name")) for d in doc.get("devices", []))
    except (KeyError, TypeError, AttributeError) as exc:
        raise TraceFormatError(f"{label}: malformed stepscope report (missing {exc})") from None
    if not step_us:
        raise TraceFormatError(f"{label}: the report has no steps to compare")
    warnings = []
    if source.get("partial"):
        warnings.append(f"{label}: partial trace (events skipped or file salvaged)")
    if complete is None:  # a saved report does not say whether its tables were cut at --top
        complete = False
    return RunSummary(
        label=label,
        kind="report",
        steps=tuple(str(s.get("name")) for s in steps),
        step_us=step_us,
        category_us=cats,
        operators=ops("operators"),
        operators_by_shape=ops("operators_by_shape"),
        kernels=kernels,
        gpu=gpu,
        findings=findings,
        complete=complete,
        profiler_steps=bool(doc.get("profiler_steps", True)),
        devices=devices,
        world_size=source.get("world_size"),
        warnings=tuple(warnings),
    )


def read_report(path: str, data: bytes | memoryview) -> RunSummary:
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise TraceFormatError(f"{path}: not a stepscope report (expected a JSON object)")
    raw = doc.get(BASELINE_SERIES)
    series = None
    if isinstance(raw, dict):
        series = {
            str(k): tuple(float(x) for x in v)
            for k, v in raw.items()
            if isinstance(v, list) and all(isinstance(x, int | float) for x in v)
        }
    complete = doc.get(BASELINE_COMPLETE) is True
    return summary_from_report(doc, path, series=series, complete=complete)


BASELINE_COMPLETE = "complete_tables"  # keys a baseline written by `diff --save-baseline` adds
BASELINE_SERIES = "kernel_steps"
BASELINE_SERIES_TOP = 300  # kernels with per-step samples kept in a baseline


def baseline_json(doc: dict[str, Any], summary: RunSummary) -> dict[str, Any]:
    """A full report plus what makes it a complete baseline: every row, per-step kernel time."""
    kernels = sorted(summary.kernels, key=lambda k: -k.device_us)[:BASELINE_SERIES_TOP]
    return {
        **doc,
        BASELINE_COMPLETE: True,
        BASELINE_SERIES: {k.name: list(k.per_step) for k in kernels if k.per_step is not None},
    }


def summarise_trace(path: str, *, use_cache: bool = True) -> RunSummary:
    return trace_summary_and_report(path, use_cache=use_cache)[0]


def trace_summary_and_report(
    path: str, *, use_cache: bool = True
) -> tuple[RunSummary, dict[str, Any]]:
    """The summary of a trace and its full report JSON (every row: a complete baseline)."""
    from stepscope.formats import load_trace

    trace = load_trace(path, use_cache=use_cache)
    report = build_report(trace, top=ALL_ROWS)
    doc = report.to_json()
    series = kernel_step_series(trace, report.analyses.steps)
    summary = summary_from_report(doc, path, series=series, complete=True)
    return _as_kind(summary, "trace"), doc


def _as_kind(s: RunSummary, kind: str) -> RunSummary:
    from dataclasses import replace

    return replace(s, kind=kind)


TRACE_SUFFIXES = (".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz")


def summarise_folder(path: str, *, use_cache: bool = True) -> RunSummary:
    """Every trace in a folder, pooled as repeated captures of one workload.

    Files with different ranks are a multi-rank run: that needs ``model.Run`` (issue 11)
    and is refused with a clear message until it is wired in.
    """
    files = sorted(
        os.path.join(path, f)
        for f in os.listdir(path)
        if f.endswith(TRACE_SUFFIXES) and os.path.isfile(os.path.join(path, f))
    )
    if not files:
        raise UsageError(f"{path}: folder has no trace files (*.json, *.json.gz)")
    runs = [summarise_trace(f, use_cache=use_cache) for f in files]
    ranks = {r.world_size for r in runs if r.world_size and r.world_size > 1}
    if ranks:
        raise UsageError(
            f"{path}: holds traces of a {max(ranks)}-rank job; diff compares one rank's traces "
            "or pooled captures (multi-rank runs are not supported yet)"
        )
    return pool(runs, path)
