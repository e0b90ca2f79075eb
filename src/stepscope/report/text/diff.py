"""``stepscope diff``: the terminal rendering of a Diff (rich)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.analysis.compare.diff import Change, Diff, ItemChange
from stepscope.analysis.compare.gate import GateResult
from stepscope.report import DEFAULT_TOP
from stepscope.report.text.layout import MISSING, Column, fit_table, print_table, say
from stepscope.report.text.render import LABELS
from stepscope.units import column_unit, count, format_us

STATUS_STYLE = {
    "added": "yellow",
    "removed": "cyan",
    "slower": "red",
    "faster": "green",
    "unchanged": "dim",
}


def signed(x: float, magnitude: str) -> str:
    """``magnitude`` (the text of |x|) with x's sign; a typographic minus, as every change."""
    return ("+" if x > 0 else "−" if x < 0 else "±") + magnitude


def _plain(x: float, spec: str) -> str:
    """A number with the same minus as the signed ones (-0 reads 0)."""
    text = format(x, spec)
    return "0" if text.strip("-0.") == "" else text.replace("-", "−")


def fmt_delta(us: float) -> str:
    return signed(us, format_us(abs(us)))


def fmt_pct(p: float | None) -> str:
    return "new" if p is None else signed(p, f"{abs(p):.1f}") + " %"


def _sig_words(ch: Change, alpha: float) -> str:
    s = ch.significance
    if s is None or s.significant is None:
        return "not testable (fewer than 3 steps in a run)" if s else "not noise-checked"
    if s.significant:
        return f"significant (p={s.p_value:.3g} < {alpha:g}, beyond the step-to-step spread)"
    if s.p_value is not None and s.p_value >= alpha:
        few = min(s.n_base, s.n_new)
        hint = (f"; only {count(few, 'step')} in a run: profile more for a firmer answer"
                if few < 6 else "")
        return f"within noise (p={s.p_value:.3g}{hint})"
    return f"within noise (smaller than the step-to-step spread {format_us(s.noise)})"


def headline(diff: Diff) -> str:
    """One line: the step-time change, whether it is real, and what explains most of it."""
    st = diff.step
    line = (
        f"step time {format_us(st.base)} → {format_us(st.new)} "
        f"({fmt_delta(st.delta)}, {fmt_pct(st.pct)}): {diff.verdict}"
    )
    if diff.main_change:
        cat = next(c for c in diff.categories if c.name == diff.main_change)
        share = "" if cat.share_pct is None else f", {_plain(cat.share_pct, '.0f')} % of the change"
        line += f"; main change: {LABELS[cat.name]} {fmt_delta(cat.change.delta)}{share}"
    return line


def render_diff_text(
    diff: Diff, console: Console | None = None, *, top: int = DEFAULT_TOP,
    gate: Sequence[GateResult] = (),
) -> None:
    console = console or Console()
    console.rule(Text("stepscope diff", style="bold"))
    for word, side in (("base:", diff.base), ("new: ", diff.new)):
        steps = count(side.steps, "step")
        say(console, f"{word} {escape(side.label)} [dim]({side.kind}, {steps})[/]")
    for w in diff.warnings:
        say(console, f"[yellow]warning:[/] {escape(w)}")
    console.print()
    colour = {"regression": "red", "improvement": "green"}.get(diff.verdict, "white")
    say(console, f"[bold {colour}]{escape(headline(diff))}[/]")
    say(console, f"  {_sig_words(diff.step, diff.alpha)}")
    _categories(console, diff)
    _items(console, "Operators", diff.operators, top, diff.alpha)
    _items(console, "Kernels", diff.kernels, top, diff.alpha)
    _findings(console, diff)
    _gpu(console, diff)
    if gate:
        console.print()
        say(console, "[bold]Gate[/]")
        for g in gate:
            mark = "[red]FAIL[/]" if g.broken else "[green]ok[/]  "
            say(console, f"  {mark} {escape(g.reason)}")


def _change_columns(changes: Sequence[Change], keep: int) -> list[Column]:
    """base, new and change in one unit for the three (so they can be read across)."""
    unit, div, fmt = column_unit([max(abs(c.base), abs(c.new), abs(c.delta)) for c in changes])

    return [Column(f"base ({unit})", [fmt.format(c.base / div) for c in changes], keep + 1),
            Column(f"new ({unit})", [fmt.format(c.new / div) for c in changes], keep + 2),
            Column(f"change ({unit})",
                   [signed(c.delta, fmt.format(abs(c.delta) / div)) for c in changes], keep + 4),
            Column("change (%)", ["new" if c.pct is None else signed(c.pct, f"{abs(c.pct):.1f}")
                                  for c in changes], keep + 3)]


def _categories(console: Console, diff: Diff) -> None:
    console.print()
    say(console, "[bold]Where the step time changed[/] (average per step)")
    shown = [c for c in diff.categories if c.change.base != 0 or c.change.new != 0]
    if not shown:
        return

    def noise(ch: Change) -> str:
        sig = ch.significance
        if sig is None or sig.significant is None:
            return MISSING
        if sig.significant:
            return "significant"
        # p below alpha but the medians differ by less than a run's step-to-step spread
        return "within spread" if (sig.p_value or 1.0) < diff.alpha else "within noise"

    def p_value(ch: Change) -> str:
        sig = ch.significance
        return MISSING if sig is None or sig.p_value is None else f"{sig.p_value:.3g}"

    columns = [*_change_columns([c.change for c in shown], keep=3),
               Column("share (%)", [MISSING if c.share_pct is None else _plain(c.share_pct, ".0f")
                                    for c in shown], keep=2),
               # the one test every table uses (noise_verdict): its word and its p-value
               Column("noise", [noise(c.change) for c in shown], keep=1, justify="left"),
               Column("p", [p_value(c.change) for c in shown], keep=1)]
    print_table(console, fit_table(console, "category", [LABELS[c.name] for c in shown],
                                   columns))


def _items(
    console: Console, title: str, rows: Sequence[ItemChange], top: int, alpha: float
) -> None:
    changed = [r for r in rows if r.status != "unchanged"][:top]
    if not changed:
        return
    console.print()
    what = "GPU time" if title == "Kernels" else "GPU time, or host time (host)"
    say(console, f"[bold]{title}[/] matched by name: largest changes of {what} per step")
    names = [r.name + ("" if r.metric == "device" else " (host)") for r in changed]
    columns = [Column("", [r.status for r in changed], keep=9, justify="left"),
               *_change_columns([r.change for r in changed], keep=3),
               Column("share (%)", [MISSING if r.share_pct is None else _plain(r.share_pct, ".0f")
                                    for r in changed], keep=2)]
    print_table(console, fit_table(console, "name", names, columns))


def _findings(console: Console, diff: Diff) -> None:
    if not diff.findings:
        return
    console.print()
    say(console, "[bold]Findings[/]")
    for f in diff.findings:
        if f.status == "new":
            say(console, f"  [red]new[/]        {escape(f.title)} [dim]\\[{escape(f.id)}][/]")
        elif f.status == "resolved":
            say(console, f"  [green]resolved[/]   {escape(f.title)} [dim]\\[{escape(f.id)}][/]")
        else:
            b, n = f.base_saving_us or 0.0, f.new_saving_us or 0.0
            say(
                console, f"  [dim]persisting[/] {escape(f.title)} [dim]\\[{escape(f.id)}][/] "
                f"saving {format_us(b)} → {format_us(n)} per step"
            )


def _gpu(console: Console, diff: Diff) -> None:
    rows = [g for g in diff.gpu if g.base is not None or g.new is not None]
    if not rows:
        return
    console.print()
    say(console, "[bold]GPU metrics[/]")
    for g in rows:
        b = MISSING if g.base is None else f"{g.base:.2f} %"
        n = MISSING if g.new is None else f"{g.new:.2f} %"
        d = "" if g.delta is None else f" ({signed(g.delta, f'{abs(g.delta):.2f}')} points)"
        label = GPU_METRIC_LABELS.get(g.metric, g.metric)
        say(console, f"  GPU {escape(g.device)} {label}: {b} → {n}{d}")


# the diff's GPU metric keys (analysis.compare.diff.GPU_METRICS) as the report names them
GPU_METRIC_LABELS = {"utilization_pct": "utilization", "sm_efficiency_pct": "SM efficiency",
                     "achieved_occupancy_pct": "achieved occupancy",
                     "tensor_core_pct": "Tensor Core share"}


def render_diff_brief(diff: Diff, console: Console, *, rows: int = 3) -> None:
    """A few lines for the demo's before/after: headline, biggest categories, findings."""
    say(console, f"[bold]stepscope diff[/]: {escape(headline(diff))}")
    say(console, f"  {_sig_words(diff.step, diff.alpha)}")
    cats = sorted(diff.categories, key=lambda c: -abs(c.change.delta))[:rows]
    for c in cats:
        if c.change.delta:
            say(
                console, f"  {LABELS[c.name]}: {format_us(c.change.base)} → "
                f"{format_us(c.change.new)} ({fmt_delta(c.change.delta)})"
            )
    for f in diff.findings:
        if f.status in ("resolved", "new"):
            say(console, f"  finding {f.status}: {escape(f.title)} [dim]\\[{escape(f.id)}][/]")
