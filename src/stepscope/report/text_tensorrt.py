"""Terminal report of a TensorRT run (rich). Every name from the files is escaped."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from stepscope.report.tensorrt import TrtReport
from stepscope.report.text_findings import render_findings

NAME_WIDTH = 60


def _ms(ms: float | None) -> str:
    if ms is None:
        return ""
    return f"{ms:,.3f} ms" if ms >= 1 else f"{ms * 1000:,.1f} µs"


def _short(name: str, width: int = NAME_WIDTH) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def render_trt_text(report: TrtReport, console: Console | None = None) -> None:
    console = console or Console()
    data = report.to_json()
    t = data["tensorrt"]
    console.rule(Text(f"stepscope report — TensorRT engine {t['engine']}", style="bold"))
    bits = [f"TensorRT {escape(t['trt_version'])}" if t["trt_version"] else "trtexec outputs"]
    if data["devices"]:
        bits.append(escape(str(data["devices"][0]["name"] or "")))
    if t["engine_precision"]:
        bits.append(f"engine precision {t['engine_precision']}")
    if t["batch"] is not None:
        bits.append(f"batch {t['batch']}")
    console.print(" · ".join(b for b in bits if b))
    console.print("[dim]files: " + escape(", ".join(t["files"])) + "[/]")
    for w in data["source"]["warnings"]:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    _summary(console, t)
    render_findings(console, report.findings, unit="inference")
    _layers(console, t, report.top)
    km = t.get("kernel_mapping")
    if km:
        console.print(
            f"[bold]Kernels → layers[/] (nsys {escape(str(t['kernels_source']))}): "
            f"{km['mapped_kernels']:,} kernels in {km['layers_with_kernels']} layers, "
            f"{km['unmapped_kernels']:,} outside any layer range ({_ms(km['unmapped_ms'])})"
        )
    _mix(console, t)
    if t["trtexec_warnings"]:
        console.print()
        console.print("[bold]trtexec warnings[/]")
        for w in t["trtexec_warnings"][:10]:
            console.print(f"  {escape(w)}")


def _summary(console: Console, t: dict[str, Any]) -> None:
    s = t["summary"]
    console.print()
    if s is None:
        console.print(
            "[bold]Performance summary[/]: not available (no log, metadata or --exportTimes)"
        )
        return
    src = {
        "log": "trtexec log",
        "trex-metadata": "trex metadata",
        "times": "recomputed from --exportTimes",
    }
    head = f"[bold]Performance summary[/] ({src.get(s['source'], s['source'])})"
    if s["throughput_qps"] is not None:
        head += f": throughput {s['throughput_qps']:,.1f} qps"
    console.print(head)
    table = Table(show_edge=False, box=None, pad_edge=False)
    for col in ("metric", "min", "median", "mean", "p99", "max"):
        table.add_column(col, justify="left" if col == "metric" else "right")
    for name, m in s["metrics"].items():
        table.add_row(
            escape(name),
            _ms(m["min_ms"]),
            _ms(m["median_ms"]),
            _ms(m["mean_ms"]),
            _ms(m["percentiles_ms"].get("p99")),
            _ms(m["max_ms"]),
        )
    console.print(table)
    if t["timing_cv_pct"] is not None:
        console.print(
            f"  GPU compute coefficient of variance: {t['timing_cv_pct']:.2f} % "
            f"over {t['iterations_timed']:,} timed iterations"
        )


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
    console.print(
        f"[bold]Layers[/] ({len(rows)}; top {min(top, len(rows))} by time, {what}; "
        f"sum {_ms(t['layer_total_ms'])})"
    )
    table = Table(show_edge=False, box=None, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("layer", overflow="ellipsis", no_wrap=True, max_width=NAME_WIDTH)
    for col in ("avg", "share", "type", "prec.", "in → out"):
        table.add_column(col, justify="right" if col in ("avg", "share") else "left", no_wrap=True)
    gpu = any(r["gpu_ms"] is not None for r in rows)
    if gpu:
        table.add_column("GPU (nsys)", justify="right", no_wrap=True)
    shown = order[:top]
    for r in shown:
        io = (
            f"{_dtypes(r['input_types'])} → {_dtypes(r['output_types'])}"
            if r["input_types"] or r["output_types"]
            else ""
        )
        cells = [
            str(r["index"]),
            escape(_short(r["name"], 40)),
            _ms(r["average_ms"]),
            "" if r["share_pct"] is None else f"{r['share_pct']:.1f} %",
            escape(r["type"]),
            r["precision"] or "",
            escape(io),
        ]
        if gpu:
            cells.append(_ms(r["gpu_ms"]))
        table.add_row(*cells)
    console.print(table)
    console.print()
    console.print("[bold]What those layers are[/] (decoded names and kernels)")
    for r in shown:
        what = r["decoded"]["summary"]
        if r["kernel"]:
            what += " | kernel: " + r["kernel"]["summary"]
        if r["gpu_kernels"]:
            what += " | nsys: " + ", ".join(
                f"{_short(k['name'], 40)} {_ms(k['ms'])} ×{k['launches']}"
                for k in r["gpu_kernels"][:3]
            )
        console.print(f"  {r['index']:>3}  {escape(what)}")


def _dtypes(types: list[str]) -> str:
    return ",".join(dict.fromkeys(types)) or "-"


def _mix(console: Console, t: dict[str, Any]) -> None:
    rf = t["reformats"]
    console.print()
    console.print(
        f"[bold]Reformat layers[/]: {rf['layers']} · {_ms(rf['average_ms'])} per inference "
        f"({rf['share_pct']:.1f} % of layer time) · {rf['converting_precision']} convert "
        "the data type"
    )
    mix = t["precision_mix"]
    if mix:
        console.print(
            "[bold]Precision mix[/] (by layer time): "
            + ", ".join(
                f"{escape(s['key'])} {s['share_pct']:.1f} % ({s['layers']} layers)" for s in mix
            )
        )
    types = t["by_type"][:8]
    if types and any(s["key"] != "unknown" for s in types):
        console.print(
            "[bold]By layer type[/]: "
            + ", ".join(f"{escape(s['key'])} {s['share_pct']:.1f} %" for s in types)
        )
