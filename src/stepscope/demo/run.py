"""``run_demo``: profile the slow variant, then the fixed one, and compare."""

from __future__ import annotations

import dataclasses
import os
import shlex
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from stepscope.capture.throughput import format_rate
from stepscope.demo.train import FIXED, SLOW, RunResult, Variant, train_profiled
from stepscope.report import DEFAULT_TOP
from stepscope.report.text.layout import hanging, say

if TYPE_CHECKING:
    from stepscope.analysis.compare.diff import Diff
    from stepscope.report.build import Report

HTML_TOP = 20  # rows per table in the HTML report (build_report's default)


@dataclass(frozen=True)
class DemoResult:
    slow_trace: str
    fast_trace: str
    slow_samples_per_s: float
    fast_samples_per_s: float
    html_report: str | None = None  # the fixed run's single-file HTML report
    html_before: str | None = None  # the slow run's
    diff: Diff | None = None  # `stepscope diff before after`
    html_compare: str | None = None  # that diff's single-file page
    device: str = "cpu"  # where both runs trained

    @property
    def speedup(self) -> float:
        return self.fast_samples_per_s / self.slow_samples_per_s if self.slow_samples_per_s else 0.0


def run_demo(outdir: str = "stepscope-logs/demo", *, steps: int = 8, batch_size: int = 64,
             device: str | None = None, quiet: bool = True, top: int = DEFAULT_TOP,
             console: Console | None = None, verbose: bool = False) -> DemoResult:
    """Train the demo workload twice under the profiler; traces go to ``outdir/{before,after}``.

    With ``quiet=False`` the story is printed, the before/after summary first: what each
    run's report found (its findings and the step's breakdown), then where the HTML reports
    are and the commands to explore further; ``verbose=True`` adds both full reports.
    """
    console = console or Console()
    if not quiet:
        say(console, f"stepscope demo: a small CNN trained twice under the profiler, before "
                     f"and after the fixes stepscope advises ({steps} steps of {batch_size} "
                     f"samples each, the last {steps - 2} profiled).")
    slow, slow_report = _one(SLOW, 1, outdir, steps, batch_size, device, quiet, top, console,
                             verbose)
    before = _write_html(slow.trace, slow_report, os.path.join(outdir, "report-before.html"))
    fast, fast_report = _one(FIXED, 2, outdir, steps, batch_size, device, quiet, top, console,
                             verbose)
    html = _write_html(fast.trace, fast_report, os.path.join(outdir, "report-after.html"))
    diff = _diff(slow.trace, fast.trace)
    compare = _write_compare_html(diff, os.path.join(outdir, "compare.html"))
    result = DemoResult(slow.trace, fast.trace, slow.samples_per_s, fast.samples_per_s, html,
                        before, diff, compare, fast.device)
    if not quiet:
        _summary(console, result)
        for title, report in (("Before the fixes", slow_report),
                              ("After the fixes", fast_report)):
            if report is not None:
                _brief(console, title, report)
        _explore(console, result)
    return result


def _one(variant: Variant, index: int, outdir: str, steps: int, batch_size: int,
         device: str | None, quiet: bool, top: int, console: Console,
         verbose: bool = False) -> tuple[RunResult, Report | None]:
    """One profiled run; with ``quiet=False`` one line says it ran (``verbose``: its whole
    report); the report is returned for the summary and the HTML page."""
    result = train_profiled(variant, outdir, steps=steps, batch_size=batch_size, device=device)
    if quiet:
        return result, None
    report = _report(result.trace, top)
    if verbose:
        from stepscope.report.text.render import render_text

        console.rule(f"[bold]Run {index}/2: {variant.name} the fixes[/]")
        say(console, f"{escape(variant.says(result.device))}.")
        render_text(report, console)
    say(console, f"  run {index}/2 ({variant.name} the fixes): "
                 f"~{format_rate(result.samples_per_s)} samples/sec")
    return result, report


def _report(trace_path: str, top: int) -> Report:
    from stepscope import load
    from stepscope.report.build import build_report

    return build_report(load(trace_path), top=top)


def _diff(before: str, after: str) -> Diff:
    from stepscope.analysis.compare.diff import diff_runs
    from stepscope.report.diff_load import summarise_trace

    return diff_runs(summarise_trace(before), summarise_trace(after))


def _write_html(trace_path: str, report: Report | None, out: str) -> str | None:
    """One run's single-file HTML report; None when the front end is not built (no npm).

    Reuses the printed report's analyses when there is one (only its row limit differs).
    """
    from stepscope.report.html import write_html

    if report is None:
        report = _report(trace_path, HTML_TOP)
    return _unless_no_front_end(lambda: write_html(dataclasses.replace(report, top=HTML_TOP), out))


def _write_compare_html(diff: Diff, out: str) -> str | None:
    """The before/after comparison as the single-file Compare page (``diff --html``)."""
    from stepscope.report.html import render_document, write_page
    from stepscope.report.json.diff import diff_to_json

    label = f"{diff.base.label} vs {diff.new.label}"
    return _unless_no_front_end(
        lambda: write_page(render_document(diff_to_json(diff), label, title="stepscope demo: "
                                           "before vs after"), out))


def _unless_no_front_end(write: Callable[[], str]) -> str | None:
    from stepscope.report.bundle import find_bundle

    # without npm the front end is not built: the terminal report stands on its own
    return write() if find_bundle() is not None else None


def stepscope_command() -> str:
    """How to call the CLI from the user's shell: ``stepscope`` when on PATH, else its path.

    The README's setup installs into ``.venv``, which a fresh shell has not activated.
    """
    beside = os.path.join(os.path.dirname(sys.executable), "stepscope")
    on_path = shutil.which("stepscope")
    if on_path and os.path.realpath(on_path) == os.path.realpath(beside):
        return "stepscope"
    if not os.path.exists(beside):
        return "stepscope"
    rel = os.path.relpath(beside)
    return rel if not rel.startswith("..") else beside


def _summary(console: Console, result: DemoResult) -> None:
    console.rule("[bold]Before / after[/]")
    console.print(f"[Throughput during profiled window] before: "
                  f"~{format_rate(result.slow_samples_per_s)} samples/sec")
    console.print(f"[Throughput during profiled window] after:  "
                  f"~{format_rate(result.fast_samples_per_s)} samples/sec  "
                  f"([bold green]{result.speedup:.1f}x[/])")
    say(console, "What changed: " + escape(FIXED.says(result.device)) + ".")
    if result.diff is not None:
        from stepscope.report.text.diff import render_diff_brief

        render_diff_brief(result.diff, console)


BRIEF_CATEGORIES = 3  # breakdown categories named in a run's brief


def _brief(console: Console, title: str, report: Report) -> None:
    """What one run's report found, in a few lines: its findings and the step's breakdown."""
    from stepscope.report.text.render import LABELS
    from stepscope.units import format_us

    console.rule(f"[bold]{title}: what stepscope found[/]")
    data = report.to_json()
    pct = data["breakdown"]["pct"]
    parts = [f"{LABELS.get(k, k)} {v:.0f} %" for k, v in
             sorted(pct.items(), key=lambda kv: -kv[1])[:BRIEF_CATEGORIES] if v >= 0.5]
    step = data["breakdown"]["step_avg_us"]
    say(console, f"Step {format_us(step)}: " + ", ".join(parts) + ".")
    shown = [f for f in report.findings if f.severity in ("high", "medium")]
    if not shown:
        say(console, "No finding saves more than a few % of the step.")
    for f in shown:
        saving = (f"saves {format_us(f.saving_us)} per step ({f.saving_pct:.0f} %, replayed)"
                  if f.method == "replay" else
                  f"up to {format_us(f.saving_us)} per step ({f.saving_pct:.0f} %)")
        hanging(console, "  • ", Text.assemble((f.title, "bold"), f" [{f.severity}] ", saving))


def _explore(console: Console, result: DemoResult) -> None:
    """Where the HTML reports are, and the commands to go further: each command on a line
    of its own and never wrapped, so it pastes whole."""
    console.rule("[bold]Explore[/]")
    for label, path in (("HTML report (before)", result.html_before),
                        ("HTML report (after)", result.html_report),
                        ("HTML comparison", result.html_compare)):
        if path:
            say(console, f"{label + ':':<22}{escape(_shown(path))}")
    command = stepscope_command()
    say(console, "The whole report of a run, and the comparison:")
    cmd, slow, fast = (shlex.quote(p) for p in (command, _shown(result.slow_trace),
                                                _shown(result.fast_trace)))
    for line in (f"{cmd} report {fast}", f"{cmd} diff {slow} {fast}"):
        console.print(f"  {escape(line)}", soft_wrap=True, highlight=False)
    if command != "stepscope":
        activate = shlex.quote(os.path.join(os.path.dirname(command), "activate"))
        say(console, f"(or put stepscope on PATH: source {escape(activate)})")


def _shown(path: str) -> str:
    """A path as short as it can be said: relative to the current folder when inside it."""
    rel = os.path.relpath(path)
    return rel if not rel.startswith("..") else path
