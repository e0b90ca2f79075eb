"""``stepscope diff``: the terminal rendering of a Diff (rich)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from stepscope.analysis.diff import Change, Diff, ItemChange
from stepscope.analysis.gate import GateResult
from stepscope.report.text import LABELS, NAME_WIDTH, _short, format_us

STATUS_STYLE = {
    "added": "yellow",
    "removed": "cyan",
    "slower": "red",
    "faster": "green",
    "unchanged": "dim",
}


def fmt_delta(us: float) -> str:
    sign = "+" if us > 0 else ("−" if us < 0 else "±")
    return f"{sign}{format_us(abs(us))}"


def fmt_pct(p: float | None) -> str:
    return "new" if p is None else f"{p:+.1f} %"


def _sig_words(ch: Change, alpha: float) -> str:
    s = ch.significance
    if s is None or s.significant is None:
        return "not testable (fewer than 3 steps in a run)" if s else "not noise-checked"
    if s.significant:
        return f"significant (p={s.p_value:.3g} < {alpha:g}, beyond the step-to-step spread)"
    if s.p_value is not None and s.p_value >= alpha:
        few = min(s.n_base, s.n_new)
        hint = f"; only {few} steps in a run: profile more for a firmer answer" if few < 6 else ""
        return f"within noise (p={s.p_value:.3g}{hint})"
    return f"within noise (smaller than the step-to-step spread {format_us(s.noise)})"


def headline(diff: Diff) -> str:
    """One line: the step-time change, whether it is real, and what explains most of it."""
    st = diff.step
    line = (
        f"step time {format_us(st.base)} -> {format_us(st.new)} "
        f"({fmt_delta(st.delta)}, {fmt_pct(st.pct)}): {diff.verdict}"
    )
    if diff.main_change:
        cat = next(c for c in diff.categories if c.name == diff.main_change)
        share = "" if cat.share_pct is None else f", {cat.share_pct:.0f} % of the change"
        line += f"; main change: {LABELS[cat.name]} {fmt_delta(cat.change.delta)}{share}"
    return line


def render_diff_text(
    diff: Diff, console: Console | None = None, *, top: int = 10,
    gate: Sequence[GateResult] = (),
) -> None:
    console = console or Console()
    console.rule(Text("stepscope diff", style="bold"))
    for word, side in (("base:", diff.base), ("new: ", diff.new)):
        console.print(f"{word} {escape(side.label)} [dim]({side.kind}, {side.steps} steps)[/]")
    for w in diff.warnings:
        console.print(f"[yellow]warning:[/] {escape(w)}")
    console.print()
    colour = {"regression": "red", "improvement": "green"}.get(diff.verdict, "white")
    console.print(f"[bold {colour}]{escape(headline(diff))}[/]")
    console.print(f"  {_sig_words(diff.step, diff.alpha)}")
    _categories(console, diff)
    _items(console, "Operators", diff.operators, top, diff.alpha)
    _items(console, "Kernels", diff.kernels, top, diff.alpha)
    _findings(console, diff)
    _gpu(console, diff)
    if gate:
        console.print()
        console.print("[bold]Gate[/]")
        for g in gate:
            mark = "[red]FAIL[/]" if g.broken else "[green]ok[/]  "
            console.print(f"  {mark} {escape(g.reason)}")


def _categories(console: Console, diff: Diff) -> None:
    console.print()
    console.print("[bold]Where the step time changed[/] (average per step)")
    table = Table(show_edge=False, box=None, pad_edge=False)
    for col in ("category", "base", "new", "change", "", "share", "noise"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for c in diff.categories:
        ch = c.change
        if ch.base == 0 and ch.new == 0:
            continue
        sig = ch.significance
        noise = "" if sig is None or sig.significant is None else (
            "significant" if sig.significant else "within noise"
        )
        share = "" if c.share_pct is None else f"{c.share_pct:.0f} %"
        table.add_row(
            LABELS[c.name], format_us(ch.base), format_us(ch.new), fmt_delta(ch.delta),
            fmt_pct(ch.pct), share, noise,
        )
    console.print(table)


def _items(
    console: Console, title: str, rows: Sequence[ItemChange], top: int, alpha: float
) -> None:
    changed = [r for r in rows if r.status != "unchanged"][:top]
    if not changed:
        return
    console.print()
    what = "GPU time" if title == "Kernels" else "GPU time, or host time (host)"
    console.print(f"[bold]{title}[/] matched by name: largest changes of {what} per step")
    table = Table(show_edge=False, box=None, pad_edge=False)
    width = max(16, min(NAME_WIDTH, console.width - 52))
    table.add_column("name", overflow="ellipsis", no_wrap=True, max_width=width)
    for col in ("", "base", "new", "change", "share"):
        table.add_column(col, justify="right", no_wrap=True)
    for r in changed:
        ch = r.change
        style = STATUS_STYLE[r.status]
        share = "" if r.share_pct is None else f"{r.share_pct:.0f} %"
        where = "" if r.metric == "device" else " [dim](host)[/]"
        table.add_row(
            escape(_short(r.name, width)) + where,
            f"[{style}]{r.status}[/]",
            format_us(ch.base), format_us(ch.new), fmt_delta(ch.delta), share,
        )
    console.print(table)


def _findings(console: Console, diff: Diff) -> None:
    if not diff.findings:
        return
    console.print()
    console.print("[bold]Findings[/]")
    for f in diff.findings:
        if f.status == "new":
            console.print(f"  [red]new[/]        {escape(f.title)} [dim]\\[{escape(f.id)}][/]")
        elif f.status == "resolved":
            console.print(f"  [green]resolved[/]   {escape(f.title)} [dim]\\[{escape(f.id)}][/]")
        else:
            b, n = f.base_saving_us or 0.0, f.new_saving_us or 0.0
            console.print(
                f"  [dim]persisting[/] {escape(f.title)} [dim]\\[{escape(f.id)}][/] "
                f"saving {format_us(b)} → {format_us(n)} per step"
            )


def _gpu(console: Console, diff: Diff) -> None:
    rows = [g for g in diff.gpu if g.base is not None or g.new is not None]
    if not rows:
        return
    console.print()
    console.print("[bold]GPU metrics[/]")
    for g in rows:
        b = "n/a" if g.base is None else f"{g.base:.2f} %"
        n = "n/a" if g.new is None else f"{g.new:.2f} %"
        d = "" if g.delta is None else f" ({g.delta:+.2f} points)"
        console.print(f"  GPU {escape(g.device)} {g.metric}: {b} → {n}{d}")


def render_diff_brief(diff: Diff, console: Console, *, rows: int = 3) -> None:
    """A few lines for the demo's before/after: headline, biggest categories, findings."""
    console.print(f"[bold]stepscope diff[/]: {escape(headline(diff))}")
    console.print(f"  {_sig_words(diff.step, diff.alpha)}")
    cats = sorted(diff.categories, key=lambda c: -abs(c.change.delta))[:rows]
    for c in cats:
        if c.change.delta:
            console.print(
                f"  {LABELS[c.name]}: {format_us(c.change.base)} → {format_us(c.change.new)} "
                f"({fmt_delta(c.change.delta)})"
            )
    for f in diff.findings:
        if f.status in ("resolved", "new"):
            console.print(f"  finding {f.status}: {escape(f.title)} [dim]\\[{escape(f.id)}][/]")
