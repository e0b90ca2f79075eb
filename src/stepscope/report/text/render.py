"""Terminal report (rich): findings first, then the numbers that back them.

Layout rules (one unit per column, no wrapped numbers, columns dropped by importance on
narrow terminals) live in ``layout``; findings in ``findings``.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.analysis.trace.launches import LAUNCH_DELAY_CUTOFF_NS, RUNTIME_CUTOFF_NS
from stepscope.report.build import Report
from stepscope.report.text.distributed import render_rank_part
from stepscope.report.text.efficiency import render_efficiency
from stepscope.report.text.findings import render_critical, render_findings, render_whatif
from stepscope.report.text.layout import (
    MISSING,
    Column,
    count_column,
    fit_table,
    hanging,
    pct_column,
    print_table,
    time_column,
)
from stepscope.report.text.ncu import render_ncu
from stepscope.report.text.nsys import render_nsys
from stepscope.report.text.real_traces import render_real_traces
from stepscope.report.text.views import VIEWS
from stepscope.units import column_unit, count
from stepscope.units import format_us as format_us

LABELS = {
    "kernel": "Kernel",
    "memcpy": "Memcpy",
    "memset": "Memset",
    "communication": "Communication",
    "runtime": "Runtime",
    "dataloader": "DataLoader",
    "cpu_exec": "CPU exec",
    "other": "Other",
}
KERNEL_NAME = 44  # kernel names need more room than operators to stay distinct


def render_text(report: Report, console: Console | None = None, *, view: str = "summary") -> None:
    """Print the report; ``view`` picks the sections (summary, operators, kernels, all)."""
    if view not in VIEWS:
        raise ValueError(f"unknown view {view!r}; expected one of {', '.join(VIEWS)}")
    console = console or Console()
    data = report.to_json()
    _header(console, data)
    if view in ("summary", "all"):
        _system(console, data.get("system"))
    render_real_traces(console, data)
    if view in ("summary", "all"):
        from stepscope.advice import skipped_rules

        render_findings(console, report.findings, skipped=len(skipped_rules(report.analyses)))
        render_whatif(data.get("whatif"), console, title="All modelled fixes together")
        render_critical(console, data.get("critical_path"))
        _breakdown(console, data)
        _gpu(console, data)
    if view in ("summary", "operators", "all"):
        _operators(console, data["operators"], "Top operators", shapes=False)
    if view in ("operators", "all"):
        _operators(console, data["operators_by_shape"], "Top operators by input shape,",
                   shapes=True)
    if view in ("summary", "all"):
        _kernels(console, data)
    if view in ("kernels", "all"):
        _kernel_launches(console, data)
    if view in ("summary", "all"):
        _temporal(console, data)
        render_efficiency(console, data)
        render_memory_and_modules(console, data)
        render_nsys(data, console, report.top)
        render_ncu(data.get("ncu"), console, report.top)
        render_rank_part(console, data)


def render_memory_and_modules(console: Console, data: dict[str, Any]) -> None:
    from stepscope.report.text.memory import render_memory_and_modules as render

    render(console, data)


def _no_devices(src: dict[str, Any]) -> str:
    """Header text when no device ran anything: a GPU trace without device work is not a
    CPU profile."""
    if not src.get("events"):
        return "nothing recorded"  # an empty export is no CPU profile either
    return "CPU only" if src["vendor"] in ("cpu", "unknown") else "no device work recorded"


def _header(console: Console, data: dict[str, Any]) -> None:
    src = data["source"]
    console.rule(Text("stepscope report", style="bold"))
    hanging(console, "", Text(src["path"]))
    devices = ", ".join(f"GPU {d['id']}: {d.get('label') or d['name'] or 'unnamed'}"
                        for d in data["devices"])
    rank = f" · rank {src['rank']}" if src["rank"] is not None else ""
    hanging(console, "", Text(f"{src['events']:,} events · {src['vendor']} · "
                              f"{devices or _no_devices(src)}{rank}"))
    for w in src["warnings"]:
        hanging(console, "", Text("warning: ", style="yellow") + Text(w))
    if src["skipped"]:
        parts = ", ".join(f"{n:,} {reason}" for reason, n in src["skipped"].items())
        hanging(console, "", Text("partial: ", style="yellow") + Text(f"skipped {parts}"))


def _system(console: Console, system: dict[str, Any] | None) -> None:
    """Macro first: a monitor output beside the trace says what bounds the whole run."""
    if system is None:
        return
    if "error" in system:
        hanging(console, "", Text("system: ", style="yellow") + Text(system["error"]))
        return
    v = system["verdict"]
    console.print()
    hanging(console, "", Text.assemble(
        ("System", "bold"), f" (stepscope monitor beside the trace, {system['samples']:,} "
        f"samples over {system['duration_s']} s): bound {v['bound'] or 'unknown'} "
        f"({v['confidence']} confidence)"))
    hanging(console, "  why: ", Text(v["reason"]))
    hanging(console, "  next: ", Text(v["next_step"]))


def _breakdown(console: Console, data: dict[str, Any]) -> None:
    bd = data["breakdown"]
    steps = data["steps"]
    console.print()
    what = (count(len(steps), "step") if data["profiler_steps"]
            else "the whole trace (no ProfilerStep)")
    avg = format_us(bd["step_avg_us"])
    hanging(console, "", Text.assemble(("Step time", "bold"), f": {avg} on average over {what}"))
    if data["steps_dropped"]:
        hanging(console, "  ", Text("dropped incomplete trailing "
                                    + ("steps: " if len(data["steps_dropped"]) > 1 else "step: ")
                                    + ", ".join(data["steps_dropped"])))
    shown = [c for c in CATEGORIES if bd["avg_us"][c] > 0]
    zero = [LABELS[c] for c in CATEGORIES if bd["avg_us"][c] <= 0]
    if shown:
        per_step = time_column("avg per step", [bd["avg_us"][c] for c in shown], keep=2)
        share = pct_column("share", [bd["pct"][c] for c in shown], keep=1)
        label_width = max(len(LABELS[c]) for c in shown)
        bar_room = console.width - label_width - per_step.width - share.width
        bar_width = max(min(bar_room - 3 * 2, 40), 0)
        columns = [per_step, share]
        if bar_width >= 5:
            bars = ["█" * round(bd["pct"][c] / 100 * bar_width) for c in shown]
            columns.append(Column("", [b.ljust(bar_width) for b in bars], keep=0,
                                  justify="left", style="cyan"))
        print_table(console, fit_table(console, "category", [LABELS[c] for c in shown], columns))
    if zero:
        hanging(console, "", Text("zero in this trace: " + ", ".join(zero), style="dim"))


def _gpu(console: Console, data: dict[str, Any]) -> None:
    gpus = data["gpu"]
    if not gpus:
        return
    console.print()
    console.print("[bold]GPU[/] (over the steps)")
    labels = {d["id"]: d.get("label") for d in data["devices"]}
    names = [f"{g['device']} {labels.get(g['device']) or g['name']}".rstrip() for g in gpus]
    columns = [
        pct_column("utilization", [g["utilization_pct"] for g in gpus], keep=4, digits=2),
        pct_column("est. SM efficiency", [g["sm_efficiency_pct"] for g in gpus], keep=3,
                   digits=2),
        pct_column("est. occupancy", [g["achieved_occupancy_pct"] for g in gpus], keep=2,
                   digits=2),
        pct_column(data.get("tensor_core_metric", "Tensor Core time"),
                   [g["tensor_core_pct"] for g in gpus], keep=1, digits=2),
    ]
    print_table(console, fit_table(console, "GPU", names, columns))


def _operators(console: Console, ops: list[dict[str, Any]], title: str, *, shapes: bool) -> None:
    if not ops:
        return
    gpu = any(o["device_total_us"] > 0 for o in ops)
    console.print()
    hanging(console, "", Text.assemble(
        (title, "bold"), f" by {'device' if gpu else 'host'} self time (whole trace)"))
    columns = [count_column("calls", [o["calls"] for o in ops], keep=3)]
    if gpu:
        columns += [time_column("device self", [o["device_self_us"] for o in ops], keep=5),
                    time_column("device total", [o["device_total_us"] for o in ops], keep=2)]
    columns += [time_column("host self", [o["host_self_us"] for o in ops], keep=4),
                time_column("host total", [o["host_total_us"] for o in ops], keep=1)]
    names = [o["name"] for o in ops]
    if shapes:
        columns.insert(0, Column("input shape", [o.get("input_shape") or MISSING for o in ops],
                                 keep=6, justify="left", max_width=console.width // 4))
    print_table(console, fit_table(console, "operator", names, columns))


def _kernels(console: Console, data: dict[str, Any]) -> None:
    ks = data["kernels"]
    if not ks:
        return
    console.print()
    console.print("[bold]Top kernels[/] by total time (whole trace)")
    columns = [
        count_column("calls", [k["calls"] for k in ks], keep=5),
        time_column("total", [k["total_us"] for k in ks], keep=6),
        time_column("mean", [k["mean_us"] for k in ks], keep=4),
        Column("blocks/SM", [MISSING if k["blocks_per_sm"] is None
                             else f"{k['blocks_per_sm']:.1f}" for k in ks], keep=1),
        pct_column("occup.", [k["achieved_occupancy_pct"] for k in ks], keep=3, digits=0),
        Column("TC", ["yes" if k["tensor_cores"] else "no" for k in ks], keep=2),
    ]
    print_table(console, fit_table(console, "kernel", [k["name"] for k in ks], columns,
                                   min_name=KERNEL_NAME))


def _dims(dims: list[int] | None) -> str:
    return MISSING if not dims else "×".join(str(d) for d in dims)


def _kernel_launches(console: Console, data: dict[str, Any]) -> None:
    ks = data["kernels"]
    console.print()
    if not ks:
        console.print("[bold]Kernel launches[/]: no GPU kernels in this trace.")
        return
    console.print("[bold]Kernel launches[/] (configuration of the top kernels)")
    unit, div, fmt = column_unit([k["max_us"] for k in ks])

    def times(key: str) -> list[str]:
        return [fmt.format(k[key] / div) for k in ks]

    columns = [
        count_column("calls", [k["calls"] for k in ks], keep=8),
        Column(f"min ({unit})", times("min_us"), keep=3),
        Column(f"mean ({unit})", times("mean_us"), keep=7),
        Column(f"max ({unit})", times("max_us"), keep=2),
        Column("grid", [_dims(k["grid"]) for k in ks], keep=6),
        Column("block", [_dims(k["block"]) for k in ks], keep=6),
        Column("regs", [MISSING if k["registers_per_thread"] is None
                        else str(k["registers_per_thread"]) for k in ks], keep=4),
        Column("smem (B)", [MISSING if k["shared_memory_bytes"] is None
                            else f"{k['shared_memory_bytes']:,}" for k in ks], keep=4),
        Column("blocks/SM", [MISSING if k["blocks_per_sm"] is None
                             else f"{k['blocks_per_sm']:.1f}" for k in ks], keep=5),
        pct_column("occup.", [k["achieved_occupancy_pct"] for k in ks], keep=5, digits=0),
        Column("TC", ["yes" if k["tensor_cores"] else "no" for k in ks], keep=1),
    ]
    print_table(console, fit_table(console, "kernel", [k["name"] for k in ks], columns,
                                   min_name=KERNEL_NAME - 12))


def _temporal(console: Console, data: dict[str, Any]) -> None:
    if not (data["temporal"] or data["launches"]):
        return  # a CPU trace: no section, no blank line for it
    console.print()
    for t in data["temporal"]:
        hanging(console, "", Text.assemble(
            ("GPU time", "bold"),
            f" (rank {t['rank']}, {format_us(t['span_us'])} active span): "
            f"compute {t['compute_pct']:.1f} %, non-compute {t['non_compute_pct']:.1f} %, "
            f"idle {t['idle_pct']:.1f} %"))
    idle = [s for s in data["idle"] if s["idle_us"] > 0]
    if idle:
        worst = max(idle, key=lambda s: s["idle_us"])
        hanging(console, "  ", Text(
            f"idle on stream {worst['stream']} (device {worst['device']}): "
            f"host wait {worst['host_wait_pct']:.0f} %, "
            f"kernel wait {worst['kernel_wait_pct']:.0f} %, other {worst['other_pct']:.0f} %"))
    la = data["launches"]
    if la:
        hanging(console, "", Text.assemble(
            ("Launches", "bold"),
            f": {la['launches']:,} · short kernels {la['short_kernels']:,} · "
            f"launch delay mean {format_us(la['launch_delay_mean_us'])}, "
            f"p95 {format_us(la['launch_delay_p95_us'])} · "
            + _over(la["runtime_outliers"], la["launches"],
                    f"launch calls over {RUNTIME_CUTOFF_NS // 1000} µs")
            + " · " + _over(la["launch_delay_outliers"], la["launches"],
                            f"delayed over {LAUNCH_DELAY_CUTOFF_NS // 1000} µs",
                            most="work is queued ahead of the GPU")))


def _over(count: int, total: int, what: str, most: str = "") -> str:
    """'launch calls over 50 µs: 6': counts over HTA's fixed thresholds, named. Past half
    of all launches they are no outliers: the line says it is most launches, and why."""
    if total and 2 * count > total:
        why = f": {most}" if most else ""
        return f"{what}: {count:,} of {total:,} ({100 * count / total:.0f} %, most launches{why})"
    return f"{what}: {count:,}"

