"""Turn a trace, a saved ``stepscope.report/1`` JSON or a folder of traces into a RunSummary.

A trace goes through the same report as ``stepscope report`` (all rows, not the top N),
so a saved report and a fresh trace of the same run summarise identically; a trace
additionally gives every kernel's per-step samples.
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import msgspec

from stepscope.analysis.compare.diff import (
    GPU_METRICS,
    FindingSummary,
    ItemSummary,
    RunSummary,
    Series,
    combine_ranks,
    pool,
)
from stepscope.analysis.compare.step_series import OperatorSeries, StepSeries, step_series
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.errors import TraceFormatError, UsageError
from stepscope.io.source import is_url
from stepscope.report.build import SCHEMA, build_report

if TYPE_CHECKING:
    from stepscope.model.trace import Trace

ALL_ROWS = 1 << 30


def _bad(where: str, what: str, x: Any) -> TraceFormatError:
    return TraceFormatError(f"{where}: malformed stepscope report (expected {what}, got {x!r})")


def _f(x: Any, where: str) -> float:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        raise _bad(where, "a number", x)
    return float(x)


def _i(x: Any, where: str) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise _bad(where, "a count", x)
    return x


def _opt(x: Any) -> float | None:
    ok = isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
    return float(x) if ok else None


def _list(doc: dict[str, Any], key: str) -> list[Any]:
    v = doc.get(key, [])
    return v if isinstance(v, list) else []


def summary_from_report(
    doc: Any, label: str, *, series: StepSeries | None = None, complete: bool | None = None,
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
        return _summary(doc, label, series, bool(complete))
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise TraceFormatError(
            f"{label}: malformed stepscope report ({type(exc).__name__}: {exc})"
        ) from None


def _summary(
    doc: dict[str, Any], label: str, series: StepSeries | None, complete: bool,
) -> RunSummary:
    steps = doc["steps"]
    if not isinstance(steps, list) or not steps:
        raise TraceFormatError(f"{label}: the report has no steps to compare")
    step_us = tuple(_f(s["duration_us"], label) for s in steps)
    cats = {
        c: tuple(_f(s["breakdown_us"].get(c, 0.0), label) for s in steps) for c in CATEGORIES
    }

    def ops(key: str) -> tuple[ItemSummary, ...]:
        table: dict[tuple[str, str | None], OperatorSeries] = (
            {} if series is None else getattr(series, key)
        )
        out = []
        for o in _list(doc, key):
            name = str(o["name"])
            shape = None if o.get("input_shape") is None else str(o["input_shape"])
            samples = table.get((name, shape))
            out.append(ItemSummary(
                name=name,
                calls=_i(o["calls"], label),
                host_us=_f(o["host_total_us"], label),
                device_us=_f(o["device_total_us"], label),
                shape=shape,
                per_step=None if samples is None else samples.device,
                host_per_step=None if samples is None else samples.host,
            ))
        return tuple(out)

    kernels = tuple(
        ItemSummary(
            name=str(k["name"]),
            calls=_i(k["calls"], label),
            host_us=0.0,
            device_us=_f(k["total_us"], label),
            per_step=None if series is None else series.kernels.get(str(k["name"])),
        )
        for k in _list(doc, "kernels")
    )
    gpu = {
        str(g["device"]): {m: _opt(g.get(m)) for m in GPU_METRICS} for g in _list(doc, "gpu")
    }
    findings = tuple(
        FindingSummary(
            id=str(f["id"]),
            title=str(f["title"]),
            severity=str(f["severity"]),
            saving_us=_f(f["estimated_saving"]["us_per_step"], label),
        )
        for f in _list(doc, "findings")
    )
    source = doc.get("source")
    source = source if isinstance(source, dict) else {}
    world = source.get("world_size")
    rank = source.get("rank")
    warnings = []
    if source.get("partial") is True:
        warnings.append(f"{label}: partial trace (events skipped or file salvaged)")
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
        complete=complete,  # a plain saved report does not say whether --top cut its tables
        profiler_steps=doc.get("profiler_steps", True) is not False,
        devices=tuple(str(d.get("name")) for d in _list(doc, "devices")),
        world_size=world if isinstance(world, int) and not isinstance(world, bool) else None,
        warnings=tuple(warnings),
        rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
    )


def read_report(path: str, data: bytes | memoryview) -> RunSummary:
    try:
        doc = msgspec.json.decode(data)
    except msgspec.DecodeError as exc:
        raise TraceFormatError(f"{path}: not valid JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise TraceFormatError(f"{path}: not a stepscope report (expected a JSON object)")
    series = StepSeries(
        _kernel_series(doc),
        _operator_series(doc, "operators"),
        _operator_series(doc, "operators_by_shape"),
    )
    complete = doc.get(BASELINE_COMPLETE) is True
    return summary_from_report(doc, path, series=series, complete=complete)


def _samples(v: Any) -> Series | None:
    """A list of finite numbers as per-step samples; None for anything else."""
    if not isinstance(v, list) or not all(_opt(x) is not None for x in v):
        return None
    return tuple(float(x) for x in v)


def _kernel_series(doc: dict[str, Any]) -> dict[str, Series]:
    """A baseline's kernel samples; malformed ones are left out (those kernels: untested)."""
    raw = doc.get(BASELINE_SERIES)
    if not isinstance(raw, dict):
        return {}
    return {str(k): s for k, v in raw.items() if (s := _samples(v)) is not None}


def _operator_series(
    doc: dict[str, Any], table: str
) -> dict[tuple[str, str | None], OperatorSeries]:
    """One operator table's samples in a baseline; malformed rows are left without samples."""
    raw = doc.get(BASELINE_OPERATOR_SERIES)
    rows = raw.get(table) if isinstance(raw, dict) else None
    out = {}
    for r in rows if isinstance(rows, list) else []:
        if not isinstance(r, dict) or not isinstance(name := r.get("name"), str):
            continue
        shape = r.get("input_shape")
        host, device = _samples(r.get("host_us")), _samples(r.get("device_us"))
        if (shape is None or isinstance(shape, str)) and host is not None and device is not None:
            out[(name, shape)] = OperatorSeries(host, device)
    return out


BASELINE_COMPLETE = "complete_tables"  # keys a baseline written by `diff --save-baseline` adds
BASELINE_SERIES = "kernel_steps"
BASELINE_SERIES_TOP = 300  # kernels with per-step samples kept in a baseline
BASELINE_OPERATOR_SERIES = "operator_steps"
BASELINE_OPERATOR_SERIES_TOP = 300  # operators per table (by name, by shape) with samples


# Views a diff never reads: a baseline file stays small without them (call stacks alone
# were over half of a ResNet-50 baseline; the critical path's events are the largest view).
NOT_IN_BASELINE = ("operators_by_stack", "kernels_by_operator", "memory", "modules",
                   "critical_path", "kernels_by_config")


def baseline_json(doc: dict[str, Any], summary: RunSummary) -> dict[str, Any]:
    """A full report plus what makes it a complete baseline: every row, per-step kernel time."""
    kernels = sorted(summary.kernels, key=lambda k: -k.device_us)[:BASELINE_SERIES_TOP]
    return {
        **{k: v for k, v in doc.items() if k not in NOT_IN_BASELINE},
        BASELINE_COMPLETE: True,
        BASELINE_SERIES: {k.name: list(k.per_step) for k in kernels if k.per_step is not None},
        BASELINE_OPERATOR_SERIES: {
            "operators": _operator_rows(summary.operators),
            "operators_by_shape": _operator_rows(summary.operators_by_shape),
        },
    }


def _operator_rows(items: tuple[ItemSummary, ...]) -> list[dict[str, Any]]:
    """The samples of the operators with the most time (GPU time, else host time)."""
    top = sorted(items, key=lambda o: -(o.device_us or o.host_us))[:BASELINE_OPERATOR_SERIES_TOP]
    return [
        {
            "name": o.name,
            **({} if o.shape is None else {"input_shape": o.shape}),
            "host_us": list(o.host_per_step),
            "device_us": list(o.per_step),
        }
        for o in top
        if o.host_per_step is not None and o.per_step is not None
    ]


def summarise_trace(path: str, *, use_cache: bool = True) -> RunSummary:
    return trace_summary_and_report(path, use_cache=use_cache)[0]


def trace_summary_and_report(
    path: str, *, use_cache: bool = True
) -> tuple[RunSummary, dict[str, Any]]:
    """The summary of a trace and its full report JSON (every row: a complete baseline)."""
    from stepscope.formats import load_trace

    return _summary_and_report(load_trace(path, use_cache=use_cache), path)


def _summary_and_report(trace: Trace, path: str) -> tuple[RunSummary, dict[str, Any]]:
    report = build_report(trace, top=ALL_ROWS)
    doc = report.to_json()
    a = report.analyses
    summary = summary_from_report(
        doc, path, series=step_series(trace, a.steps, a.tree), complete=True
    )
    return _as_kind(summary, "trace"), doc


def _as_kind(s: RunSummary, kind: str) -> RunSummary:
    return replace(s, kind=kind)


TRACE_SUFFIXES = (".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz")


def summarise_folder(path: str, *, use_cache: bool = True) -> RunSummary:
    """Every trace in a folder as one run, as ``stepscope report DIR`` reads the folder.

    ``report.folder.folder_layout`` decides: ranks of one job are combined step by step
    (``combine_ranks``: the slowest rank sets the step time); captures of one process, or
    of one workload run one after another, are pooled (``pool``); a mixed folder is refused.
    """
    from stepscope.analysis.distributed.rank import capture_window, host_pid
    from stepscope.formats import load_trace
    from stepscope.model.run import assign_ranks
    from stepscope.report.folder import RANKS, Capture, folder_layout

    if is_url(path):  # a cloud prefix
        from stepscope.io.listing import list_traces

        files = list_traces(path)
    else:
        files = sorted(
            os.path.join(path, f)
            for f in os.listdir(path)
            if f.endswith(TRACE_SUFFIXES) and os.path.isfile(os.path.join(path, f))
        )
    if not files:
        raise UsageError(f"{path}: folder has no trace files (*.json, *.json.gz)")
    runs, captures = [], []
    for f in files:
        trace = load_trace(f, use_cache=use_cache)
        runs.append(_as_kind(_summary_and_report(trace, f)[0], "trace"))
        m = trace.meta
        captures.append(Capture(f, m.rank, m.world_size, host_pid(trace),
                                *capture_window(trace)))
    layout = folder_layout(path, captures)
    if layout.kind != RANKS:
        return pool(runs, path)
    if not any(c.distributed for c in captures):  # ranks without distributedInfo
        numbers, _ = assign_ranks(files, [None] * len(files))
        runs = [replace(r, rank=n, world_size=len(runs)) for r, n in zip(runs, numbers,
                                                                            strict=True)]
    try:
        return combine_ranks(sorted(runs, key=lambda r: r.rank or 0), path)
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None
