"""The terminal view of a monitored run: the verdict first, then sparklines of the
metrics that decide it (one line each, fits 80 columns)."""

from __future__ import annotations

import math
from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.model.system import SystemSamples
from stepscope.report.text.layout import hanging
from stepscope.units import format_bytes

BARS = "▁▂▃▄▅▆▇█"
LABEL = 18  # label column
VALUE = 12  # the mean, right-aligned

# (label, column, unit, fixed top or None: the series' own maximum)
LINES: tuple[tuple[str, str, str, float | None], ...] = (
    ("host CPU", "cpu", "%", 100.0),
    ("iowait", "iowait", "%", 100.0),
    ("main process CPU", "main_cpu", "%", None),
    ("main CPU demand", "main_demand_pct", "%", 100.0),
    ("workers CPU", "workers_cpu", "%", None),
    ("others CPU", "others_cpu", "%", None),
    ("main process RSS", "main_rss", "B", None),
    ("disk read", "disk_read", "B/s", None),
    ("disk write", "disk_write", "B/s", None),
    ("program read", "tree_read", "B/s", None),
    ("network in", "net_recv", "B/s", None),
    ("major faults", "major_faults", "/s", None),
)
GPU_LINES = (("util", "%", 100.0), ("mem_util", "%", 100.0), ("sm_active", "%", 100.0),
             ("dram_bw", "%", 100.0), ("power", "W", None))


def sparkline(values: list[float], width: int, top: float | None = None) -> str:
    """``values`` averaged into ``width`` buckets, one block character each."""
    numbers = [v for v in values if not math.isnan(v)]
    if not numbers or width <= 0:
        return ""
    buckets = []
    n = len(values)
    for b in range(min(width, n)):
        chunk = [v for v in values[b * n // min(width, n):(b + 1) * n // min(width, n)]
                 if not math.isnan(v)]
        buckets.append(sum(chunk) / len(chunk) if chunk else math.nan)
    peak = top if top is not None else max(numbers)
    if peak <= 0:
        return BARS[0] * len(buckets)
    return "".join(" " if math.isnan(v) else BARS[min(int(v / peak * len(BARS)),
                                                      len(BARS) - 1)] for v in buckets)


def render_monitor(data: dict[str, Any], samples: SystemSamples,
                   console: Console | None = None) -> None:
    console = console or Console()
    width = min(console.width, 80)
    v = data["verdict"]
    console.print(Text(f"stepscope monitor: {data['command']}", style="bold"))
    hanging(console, "", Text(f"{data['samples']} samples at {data['hz']:g} Hz over "
                              f"{data['duration_s']:.1f} s; {data['cores']} cores; "
                              f"GPUs: {', '.join(data['gpus']) or 'none'}"), extra=2)
    bound = v["bound"] or "unknown"
    console.print(Text.assemble(("bound: ", "bold"), (bound, "bold red"),
                                f"  (confidence {v['confidence']})"))
    console.print(Text(f"why: {v['reason']}"), width=width)
    console.print(Text(f"next: {v['next_step']}"), width=width)
    _phases(console, data)
    console.print()
    spark = max(width - LABEL - VALUE - 2, 10)
    series = _series(samples)
    for label, column, unit, top in LINES:
        values = series.get(column)
        if values and any(not math.isnan(x) and x > 0 for x in values):
            _line(console, label, values, unit, top, spark)
    for name, unit, top in GPU_LINES:
        rows = samples.series(f"gpu_{name}")
        for g in range(len(rows[0]) if rows else 0):
            values = [float(r[g]) for r in rows]
            if any(not math.isnan(x) for x in values):
                _line(console, f"GPU{g} {name}", values, unit, top, spark)
    files = data.get("samples_file")
    if files:
        console.print()
        hanging(console, "samples: ", Text(files))


def _phases(console: Console, data: dict[str, Any]) -> None:
    phases = data.get("phases") or {}
    if not phases:
        return
    th = data["throughput"]
    parts = [f"{k} {100 * v:.0f}%" for k, v in phases.items() if v and v >= 0.005]
    hanging(console, "", Text(f"main process ({data['window']['seconds']:.1f} s window): "
                              + (", ".join(parts) or "no hooked phase")), extra=2)
    counts = [f"{th['steps']} optimizer steps"] if th["steps"] else []
    if th["batches"]:
        counts.append(f"{th['batches']} batches")
    if counts:
        counts.append(f"{th['steps_per_s']:.2f} steps/s")
    if th["samples_per_s"]:
        counts.append(f"{th['samples_per_s']:.1f} samples/s")
    if counts:
        hanging(console, "", Text(", ".join(counts)), extra=2)


def _series(samples: SystemSamples) -> dict[str, list[float]]:
    out = {name: [float(x) for x in samples.series(name)]
           for _, name, _, _ in LINES if samples.series(name)}
    oncpu, runq = samples.series("main_oncpu"), samples.series("main_runqueue")
    if oncpu:
        out["main_demand_pct"] = [100 * (float(a) + float(b))
                                  for a, b in zip(oncpu, runq, strict=True)]
    return out


def _line(console: Console, label: str, values: list[float], unit: str,
          top: float | None, width: int) -> None:
    numbers = [x for x in values if not math.isnan(x)]
    mean = sum(numbers) / len(numbers) if numbers else math.nan
    if unit in ("B", "B/s"):
        shown = format_bytes(mean) + ("/s" if unit == "B/s" else "")
    else:
        shown = f"{mean:,.0f} {unit}".strip()
    text = Text(f"{label:<{LABEL}}")
    text.append(sparkline(values, width, top), style="cyan")
    text.append(f"  {shown:>{VALUE}}")
    console.print(text, no_wrap=True, overflow="ellipsis")
