"""Terminal rendering of a TensorRT engine comparison (analysis.tensorrt_diff)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from stepscope.analysis.tensorrt_diff import EngineComparison


def _ms(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:,.3f} ms" if abs(ms) >= 1 else f"{ms * 1000:,.1f} µs"


def _short(name: str, width: int = 50) -> str:
    return name if len(name) <= width else name[: width - 1] + "…"


def render_engine_diff(c: EngineComparison, console: Console | None = None, top: int = 15) -> None:
    console = console or Console()
    console.rule(Text(f"TensorRT engines — A: {c.a_name}  vs  B: {c.b_name}", style="bold"))
    table = Table(show_edge=False, box=None, pad_edge=False)
    for col in ("", "A", "B"):
        table.add_column(col, justify="left" if not col else "right")
    table.add_row("precision", c.a_precision or "?", c.b_precision or "?")
    table.add_row("layers", str(c.a_layers), str(c.b_layers))
    table.add_row("per inference (GPU compute)", _ms(c.a_inference_ms), _ms(c.b_inference_ms))
    table.add_row("sum of per-layer times", _ms(c.a_layer_total_ms), _ms(c.b_layer_total_ms))
    if c.a_throughput_qps or c.b_throughput_qps:
        table.add_row(
            "throughput (qps)", f"{c.a_throughput_qps or 0:,.1f}", f"{c.b_throughput_qps or 0:,.1f}"
        )
    console.print(table)
    if c.speedup:
        console.print(f"B is [bold]{c.speedup:.2f}x[/] the speed of A per inference")
    if c.matched:
        console.print()
        console.print(f"[bold]Matched layers[/] ({len(c.matched)}; largest changes first)")
        t = Table(show_edge=False, box=None, pad_edge=False)
        t.add_column("layer", overflow="ellipsis", no_wrap=True, max_width=50)
        for col in ("A", "B", "Δ", "prec. A→B"):
            t.add_column(col, justify="right" if col != "prec. A→B" else "left", no_wrap=True)
        for d in c.matched[:top]:
            t.add_row(
                escape(_short(d.name)),
                _ms(d.a_ms),
                _ms(d.b_ms),
                ("+" if d.delta_ms > 0 else "") + _ms(d.delta_ms),
                f"{d.a_precision or '?'}→{d.b_precision or '?'}",
            )
        console.print(t)
    for label, rows, side in (("Only in A", c.only_a, "a"), ("Only in B", c.only_b, "b")):
        if rows:
            console.print(
                f"[bold]{label}[/] ({len(rows)}): "
                + "; ".join(
                    f"{escape(_short(d.name, 40))} {_ms(d.a_ms if side == 'a' else d.b_ms)}"
                    for d in rows[:6]
                )
                + ("; …" if len(rows) > 6 else "")
            )
    if c.fusions:
        console.print()
        console.print("[bold]Fusion differences[/]")
        for f in c.fusions[:top]:
            other = "A" if f.side == "b" else "B"
            console.print(
                f"  {f.side.upper()} fuses {len(f.others)} layers of {other} "
                f"({_ms(f.others_ms)}) into {escape(_short(f.layer, 60))} ({_ms(f.layer_ms)})"
            )
    if c.precision_mix:
        console.print()
        console.print(
            "[bold]Precision mix[/] (share of layer time, A → B): "
            + ", ".join(
                f"{escape(s.key)} {s.a_pct:.1f} % → {s.b_pct:.1f} %" for s in c.precision_mix
            )
        )
