"""Terminal rendering of a TensorRT engine comparison (analysis.tensorrt_diff)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.analysis.tensorrt.diff import EngineComparison, LayerDelta
from stepscope.report import DEFAULT_TOP
from stepscope.report.text.layout import (
    MISSING,
    Column,
    fit_table,
    hanging,
    print_table,
    say,
    short_name,
    text_column,
)
from stepscope.report.text.tensorrt import LAYER_NAME
from stepscope.units import column_unit, format_us


def _t(ms: float | None) -> str:
    """A time in prose: '343.0 µs', '12.40 ms'; MISSING when unknown."""
    return MISSING if ms is None else format_us(ms * 1000.0)


def _in_one_unit(values_ms: Sequence[float | None]) -> tuple[str, list[str]]:
    """A row or column of times in one unit: (unit, cells); None reads MISSING."""
    unit, div, fmt = column_unit(abs(v) * 1000.0 for v in values_ms if v is not None)
    return unit, [MISSING if v is None else fmt.format(v * 1000.0 / div) for v in values_ms]


def render_engine_diff(
    c: EngineComparison, console: Console | None = None, top: int = DEFAULT_TOP
) -> None:
    console = console or Console()
    console.rule(Text("TensorRT engines: A vs B", style="bold"))
    for side, name in (("A", c.a_name), ("B", c.b_name)):  # names whole, never cut by the rule
        hanging(console, f"{side}: ", Text(name))
    _overview(console, c)
    if c.speedup:
        say(console, f"B is [bold]{c.speedup:.2f}x[/] the speed of A per inference")
    if c.matched:
        console.print()
        same = all(d.delta_ms == 0.0 for d in c.matched)
        order = "no layer's time changed; slowest first" if same else "largest changes first"
        say(console, f"[bold]Matched layers[/] ({len(c.matched)}; {order})")
        _matched(console, c.matched[:top])
    for label, rows, side in (("Only in A", c.only_a, "a"), ("Only in B", c.only_b, "b")):
        if rows:
            say(console,
                f"[bold]{label}[/] ({len(rows)}): "
                + "; ".join(
                    f"{escape(short_name(d.name, 40))} {_t(d.a_ms if side == 'a' else d.b_ms)}"
                    for d in rows[:6]
                )
                + ("; …" if len(rows) > 6 else ""))
    if c.fusions:
        console.print()
        say(console, "[bold]Fusion differences[/]")
        for f in c.fusions[:top]:
            other = "A" if f.side == "b" else "B"
            hanging(console, "  ", Text(
                f"{f.side.upper()} fuses {len(f.others)} layers of {other} "
                f"({_t(f.others_ms)}) into {short_name(f.layer, 60)} ({_t(f.layer_ms)})"),
                extra=2)
    if c.precision_mix:
        console.print()
        say(console,
            "[bold]Precision mix[/] (share of layer time, A → B): "
            + ", ".join(
                f"{escape(s.key)} {s.a_pct:.1f} % → {s.b_pct:.1f} %" for s in c.precision_mix
            ))


def _overview(console: Console, c: EngineComparison) -> None:
    """A and B side by side; each time row in its own unit, named in the row's label."""
    names = ["precision", "layers"]
    a = [c.a_precision or MISSING, str(c.a_layers)]
    b = [c.b_precision or MISSING, str(c.b_layers)]
    for label, x, y in (("per inference, GPU compute", c.a_inference_ms, c.b_inference_ms),
                        ("sum of per-layer times", c.a_layer_total_ms, c.b_layer_total_ms)):
        unit, cells = _in_one_unit([x, y])
        names.append(f"{label} ({unit})")
        a.append(cells[0])
        b.append(cells[1])
    if c.a_throughput_qps or c.b_throughput_qps:
        names.append("throughput (qps)")
        a.append(MISSING if c.a_throughput_qps is None else f"{c.a_throughput_qps:,.1f}")
        b.append(MISSING if c.b_throughput_qps is None else f"{c.b_throughput_qps:,.1f}")
    print_table(console, fit_table(console, "", names, [Column("A", a, 2), Column("B", b, 1)]))


def _matched(console: Console, rows: Sequence[LayerDelta]) -> None:
    """A, B and Δ in one unit for the three, so they can be read across."""
    unit, div, fmt = column_unit(
        max(abs(d.a_ms or 0.0), abs(d.b_ms or 0.0), abs(d.delta_ms)) * 1000.0 for d in rows)

    def cell(ms: float | None) -> str:
        return MISSING if ms is None else fmt.format(ms * 1000.0 / div)

    def signed(ms: float) -> str:
        sign = "+" if ms > 0 else ("−" if ms < 0 else "±")
        return sign + fmt.format(abs(ms) * 1000.0 / div)

    columns = [
        Column(f"A ({unit})", [cell(d.a_ms) for d in rows], keep=5),
        Column(f"B ({unit})", [cell(d.b_ms) for d in rows], keep=6),
        Column(f"Δ ({unit})", [signed(d.delta_ms) for d in rows], keep=7),
        text_column("prec. A→B", [f"{d.a_precision or MISSING}→{d.b_precision or MISSING}"
                                  for d in rows], keep=3),
    ]
    print_table(console, fit_table(console, "layer", [d.name for d in rows], columns,
                                   min_name=LAYER_NAME))
