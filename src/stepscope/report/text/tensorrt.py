"""Terminal report of a TensorRT run (rich). Every name from the files is escaped."""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.report.tensorrt import TrtReport
from stepscope.report.text.findings import render_findings
from stepscope.report.text.layout import (
    MISSING,
    Column,
    fit_table,
    hanging,
    pct_column,
    print_table,
    say,
    short_name,
    text_column,
    time_column,
)
from stepscope.units import column_unit, count, format_us

LAYER_NAME = 28  # layer names say what runs: narrow terminals drop columns before them


def _files(console: Console, files: list[str]) -> None:
    """The folder once, then the file names (a long shared path folded five times)."""
    if len(files) > 1:
        folder = os.path.commonpath(files) or os.curdir  # "" for files named from the cwd
        hanging(console, "files in ", Text(folder + os.sep, style="dim"), extra=2)
        hanging(console, "  ", Text(", ".join(os.path.relpath(f, folder) for f in files),
                                    style="dim"), extra=2)
    elif files:
        hanging(console, "file: ", Text(files[0], style="dim"), extra=2)


def _us(ms: float | None) -> float | None:
    return None if ms is None else ms * 1000.0


def _t(ms: float | None) -> str:
    """A time in prose: '433.2 µs', '12.40 ms'; MISSING when unknown."""
    return MISSING if ms is None else format_us(ms * 1000.0)


def render_trt_text(report: TrtReport, console: Console | None = None) -> None:
    console = console or Console()
    data = report.to_json()
    t = data["tensorrt"]
    console.rule(Text(f"stepscope report — TensorRT engine {t['engine']}", style="bold"))
    bits = [f"TensorRT {t['trt_version']}" if t["trt_version"] else "trtexec outputs"]
    if data["devices"]:
        bits.append(str(data["devices"][0]["name"] or ""))
    if t["engine_precision"]:
        bits.append(f"engine precision {t['engine_precision']}")
    if t["batch"] is not None:
        bits.append(f"batch {t['batch']}")
    hanging(console, "", Text(" · ".join(b for b in bits if b)))
    _files(console, t["files"])
    for w in data["source"]["warnings"]:
        hanging(console, "warning: ", Text(w))
    _summary(console, t)
    render_findings(console, report.findings, unit="inference")
    _layers(console, t, report.top)
    km = t.get("kernel_mapping")
    if km:
        console.print()
        say(console,
            f"[bold]Kernels → layers[/] (nsys {escape(str(t['kernels_source']))}): "
            f"{count(km['mapped_kernels'], 'kernel')} in "
            f"{count(km['layers_with_kernels'], 'layer')}, "
            f"{km['unmapped_kernels']:,} outside any layer range ({_t(km['unmapped_ms'])})")
    _mix(console, t)
    if t["trtexec_warnings"]:
        console.print()
        say(console, "[bold]trtexec warnings[/]")
        for w in t["trtexec_warnings"][:10]:
            hanging(console, "  ", Text(w), extra=2)


def _summary(console: Console, t: dict[str, Any]) -> None:
    s = t["summary"]
    console.print()
    if s is None:
        if t.get("log"):  # read, but it holds no summary: say so, not "no log"
            why = ("the trtexec log has no '=== Performance summary ===' section"
                   + (" (the run did not pass)" if t["passed"] is False else
                      " (the run ended before it?)" if t["passed"] is None else "")
                   + "; no trex metadata or --exportTimes either")
        else:
            why = "no trtexec log, trex metadata or --exportTimes among the files"
        say(console, f"[bold]Performance summary[/]: not available: {escape(why)}")
        return
    src = {
        "log": "trtexec log",
        "trex-metadata": "trex metadata",
        "times": "recomputed from --exportTimes",
    }
    head = f"[bold]Performance summary[/] ({src.get(s['source'], s['source'])})"
    if s["throughput_qps"] is not None:
        head += f": throughput {s['throughput_qps']:,.1f} qps"
    say(console, head)
    # Latency and enqueue time differ a thousandfold: one unit per row, named in its label.
    names: list[str] = []
    cells: list[list[str]] = []
    for name, m in s["metrics"].items():
        row = [m["min_ms"], m["median_ms"], m["mean_ms"], m["percentiles_ms"].get("p99"),
               m["max_ms"]]
        unit, div, fmt = column_unit(v * 1000.0 for v in row if v is not None)
        names.append(f"{name} ({unit})")
        cells.append([MISSING if v is None else fmt.format(v * 1000.0 / div) for v in row])
    columns = [Column(h, [c[i] for c in cells], keep) for i, (h, keep) in
               enumerate((("min", 3), ("median", 5), ("mean", 4), ("p99", 2), ("max", 1)))]
    print_table(console, fit_table(console, "metric", names, columns))
    if t["timing_cv_pct"] is not None:
        say(console,
            f"  GPU compute coefficient of variance: {t['timing_cv_pct']:.2f} % "
            f"over {t['iterations_timed']:,} timed iterations")


def _layers(console: Console, t: dict[str, Any], top: int) -> None:
    rows = t["layers"]
    if not rows:
        return
    timed = any(r["average_ms"] is not None for r in rows)
    order = sorted(rows, key=lambda r: -(r["average_ms"] or 0.0)) if timed else rows
    console.print()
    what = (
        f"per inference, {t['profiled_iterations']} profiled iterations"
        if t["profiled_iterations"]
        else "per inference"
    )
    say(console,
        f"[bold]Layers[/] ({len(rows)}; top {min(top, len(rows))} by time, {what}; "
        f"sum {_t(t['layer_total_ms'])})")
    shown = order[:top]
    columns = [
        Column("#", [str(r["index"]) for r in shown], keep=6),
        time_column("avg", [_us(r["average_ms"]) for r in shown], keep=9),
        pct_column("share", [r["share_pct"] for r in shown], keep=8),
        text_column("type", [r["type"] for r in shown], keep=4),
        text_column("prec.", [r["precision"] for r in shown], keep=5),
        text_column("in → out", [
            f"{_dtypes(r['input_types'])} → {_dtypes(r['output_types'])}"
            if r["input_types"] or r["output_types"] else None for r in shown], keep=2),
    ]
    if any(r["gpu_ms"] is not None for r in rows):
        columns.append(time_column("GPU (nsys)", [_us(r["gpu_ms"]) for r in shown], keep=7))
    print_table(console, fit_table(console, "layer", [r["name"] for r in shown], columns,
                                   min_name=LAYER_NAME))
    console.print()
    say(console, "[bold]What those layers are[/] (decoded names and kernels)")
    for r in shown:
        what = r["decoded"]["summary"]
        if r["kernel"]:
            what += " | kernel: " + r["kernel"]["summary"]
        if r["gpu_kernels"]:
            what += " | nsys: " + ", ".join(
                f"{short_name(k['name'], 40)} {_t(k['ms'])} ×{k['launches']}"
                for k in r["gpu_kernels"][:3]
            )
        hanging(console, f"  {r['index']:>3}  ", Text(what))


def _dtypes(types: list[str]) -> str:
    return ",".join(dict.fromkeys(types)) or MISSING


def _mix(console: Console, t: dict[str, Any]) -> None:
    rf = t["reformats"]
    console.print()
    say(console,
        f"[bold]Reformat layers[/]: {rf['layers']} · {_t(rf['average_ms'])} per inference "
        f"({rf['share_pct']:.1f} % of layer time) · {rf['converting_precision']} convert "
        "the data type")
    mix = t["precision_mix"]
    if mix:
        say(console,
            "[bold]Precision mix[/] (by layer time): "
            + ", ".join(
                f"{escape(s['key'])} {s['share_pct']:.1f} % ({s['layers']} layers)" for s in mix
            ))
    types = t["by_type"][:8]
    if types and any(s["key"] != "unknown" for s in types):
        say(console,
            "[bold]By layer type[/]: "
            + ", ".join(f"{escape(s['key'])} {s['share_pct']:.1f} %" for s in types))
