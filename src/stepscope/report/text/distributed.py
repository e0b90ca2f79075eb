"""Text rendering of a run's distributed view (stepscope report DIR), in the report's layout."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from stepscope.report import DEFAULT_TOP
from stepscope.report.text.findings import render_findings
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
from stepscope.report.text.parallelism import render_all_to_all, render_fsdp
from stepscope.units import count, format_us

if TYPE_CHECKING:
    from stepscope.report.run import RunReport
    from stepscope.report.spans import SpansReport


def render_run_text(
    report: RunReport, console: Console | None = None, top: int = DEFAULT_TOP
) -> None:
    console = console or Console()
    data = report.to_json()
    d: dict[str, Any] = data["distributed"]
    console.rule(Text("stepscope report", style="bold"))
    hanging(console, "", Text(str(report.run.location)))
    hanging(console, "", Text(f"{d['world_size']} ranks · backend {d['backend'] or 'unknown'} · "
                              f"ranks from {d['rank_source']}"))
    for err in d["failed"]:
        hanging(console, "", Text("skipped rank: ", style="yellow") + Text(err))
    render_findings(console, report.findings)
    _ranks(console, d["ranks"][:top] if len(d["ranks"]) > 2 * top else d["ranks"])
    _stragglers(console, d["stragglers"][:top])
    _critical_path(console, data.get("critical_path"), top)
    _steps(console, d["steps"][:top])
    _collectives(console, d["collectives"][:top])
    render_all_to_all(console, d.get("all_to_all"), top)
    render_fsdp(console, d.get("fsdp"), top)
    _groups(console, d["groups"], d["matched_by"], top)
    if d.get("matching_note"):
        hanging(console, "", Text("note: ", style="yellow") + Text(d["matching_note"]))
    _pipeline(console, d["pipeline"])


def render_spans_text(report: SpansReport, console: Console | None = None) -> None:
    """Captures of one process (report/folder.py): the captures, then the process's findings."""
    console = console or Console()
    console.rule(Text("stepscope report", style="bold"))
    hanging(console, "", Text(str(report.run.location)))
    n = len(report.spans)
    what = (f"{n} captures of {report.layout.process}, not ranks of a job: each analysed on "
            "its own; findings merged by rule" if n > 1
            else f"1 capture of {report.layout.process}")
    hanging(console, "", Text(what))
    for err in report.failed:
        hanging(console, "", Text("skipped capture: ", style="yellow") + Text(err))
    _title(console, "Captures (spans)")
    spans = report.spans
    columns = [count_column("steps", [s.steps for s in spans]),
               time_column("mean step", [s.mean_step_us for s in spans], keep=5),
               count_column("findings", [len(s.findings) for s in spans])]
    names = [s.path.rstrip("/").rsplit("/", 1)[-1] for s in spans]
    print_table(console, fit_table(console, "capture", names, columns, min_name=12))
    render_findings(console, report.findings)


def _title(console: Console, title: str) -> None:
    console.print()
    console.print(Text(title, style="bold"))


def _ranks(console: Console, ranks: list[dict[str, Any]]) -> None:
    if not ranks:
        return
    _title(console, "Per rank (all steps)")

    def times(key: str, header: str, keep: int) -> Column:
        return time_column(header, [r[key] for r in ranks], keep)

    columns = [times("computation_us", "computation", 8), times("overlap_us", "overlap", 5),
               times("communication_us", "communication", 7), times("other_us", "other", 3),
               times("sync_us", "sync wait", 6), times("transfer_us", "transfer", 4),
               pct_column("comm overlap", [r["comm_overlap_pct"] for r in ranks], keep=2)]
    print_table(console, fit_table(console, "rank", [str(r["rank"]) for r in ranks], columns,
                                   min_name=4))


def _stragglers(console: Console, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    _title(console, "Stragglers (slowest first)")
    columns = [
        time_column("wait caused", [s["wait_caused_us"] for s in rows], keep=5),
        pct_column("share", [s["share_pct"] for s in rows], keep=4),
        Column("last at", [f"{s['last_arrivals']}/{s['matched_calls']}" for s in rows], keep=3),
        time_column("compute excess", [s["computation_excess_us"] for s in rows], keep=2),
    ]
    print_table(console, fit_table(console, "rank", [str(s["rank"]) for s in rows], columns,
                                   min_name=4))


def _critical_path(console: Console, cp: dict[str, Any] | None, top: int) -> None:
    """The run's critical path across ranks (docs/whatif.md, A run of ranks)."""
    if not cp:
        return
    if "length_us" not in cp:
        hanging(console, "", Text("critical path across ranks: ", style="yellow")
                + Text(cp["note"]))
        return
    _title(console, "Critical path across ranks (the replay's longest path)")
    through = cp["runs_through_rank"]
    share = cp["by_rank_us"].get(str(through), 0.0)
    pct = 100.0 * share / cp["length_us"] if cp["length_us"] else 0.0
    role = ("the straggler: the ranks' collectives wait for it" if cp.get("straggler")
            is not None else "no collective joins the ranks")
    hanging(console, "", Text(
        f"{format_us(cp['length_us'])} per step, ending on rank {cp['end_rank']}; it runs through "
        f"rank {through} ({pct:.0f} % of it on that rank's events; {role}); slowest "
        f"rank's step {format_us(cp['step_us'])} (rank {cp['slowest_rank']})"))
    waits = cp["waits"]
    if waits:
        shown = "; ".join(f"{w['collective']}: rank {w['rank']} waited {format_us(w['wait_us'])} "
                          f"for rank {w['waited_on_rank']}" for w in waits[:top])
        more = f" and {len(waits) - top} more" if len(waits) > top else ""
        hanging(console, "  ", Text("changes rank at " + shown + more, style="dim"))
    rows = cp["events"][:top]
    if rows:
        columns = [Column("rank", [str(e["rank"]) for e in rows], keep=4),
                   time_column("on path", [e["on_path_us"] for e in rows], keep=5),
                   Column("category", [e["category"] for e in rows], keep=3)]
        print_table(console, fit_table(console, "event", [e["name"] for e in rows], columns,
                                       min_name=12))
    if cp.get("note"):
        hanging(console, "  ", Text("note: ", style="yellow") + Text(cp["note"]))


def _steps(console: Console, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    _title(console, "Per step: who made the others wait")
    columns = [Column("last rank", [str(s["last_rank"]) for s in rows], keep=3),
               time_column("others waited", [s["wait_us"] for s in rows], keep=2)]
    print_table(console, fit_table(console, "step", [s["step"] or MISSING for s in rows],
                                   columns, min_name=4))


def _collectives(console: Console, rows: list[dict[str, Any]]) -> None:
    if not rows:
        return
    _title(console, "Collectives (bandwidths by nccl-tests' formulas)")

    def gbps(key: str) -> list[str]:
        return [MISSING if c[key] is None else f"{c[key]:.3f}" for c in rows]

    columns = [
        Column("group", [c["process_group"] or MISSING for c in rows], keep=2, justify="left"),
        count_column("calls", [c["calls"] for c in rows], keep=6),
        Column("bytes/call", [MISSING if c["bytes_per_call"] is None
                              else f"{c['bytes_per_call']:,.0f}" for c in rows], keep=5),
        time_column("time", [c["time_us"] for c in rows], keep=7),
        time_column("transfer", [c["transfer_us"] for c in rows], keep=3),
        Column("algbw (GB/s)", gbps("algbw_gbps"), keep=4),
        Column("busbw (GB/s)", gbps("busbw_gbps"), keep=4),
    ]
    print_table(console, fit_table(console, "collective", [c["collective"] for c in rows],
                                   columns, min_name=10))


def _groups(console: Console, groups: list[dict[str, Any]], matched_by: str, top: int) -> None:
    """Per process group: the collectives with the longest waits."""
    for g in groups:
        calls = sorted(g["calls"], key=lambda c: -max(c["wait_us"], default=0))[:top]
        if not calls:
            continue
        name = g["process_group"] or "unnamed"
        _title(console, f"Process group {name} (ranks {_ranks_text(g['ranks'])}): matched by "
                        f"{matched_by}, longest waits")
        columns = [
            Column("seq", [str(c["seq"]) for c in calls], keep=5),
            Column("bytes", [MISSING if c["bytes"] < 0 else f"{c['bytes']:,}" for c in calls],
                   keep=3),
            time_column("transfer", [c["transfer_us"] for c in calls], keep=6),
            time_column("skew", [c["skew_us"] for c in calls], keep=4),
            time_column("max wait", [max(c["wait_us"], default=0) for c in calls], keep=7),
            Column("longest waiter", [str(c["ranks"][c["wait_us"].index(max(c["wait_us"]))])
                                      for c in calls], keep=2),
        ]
        print_table(console, fit_table(console, "collective", [c["name"] for c in calls],
                                       columns, min_name=10))


def _ranks_text(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}-{ranks[-1]}"
    return ", ".join(map(str, ranks))


def _pipeline(console: Console, p: dict[str, Any] | None) -> None:
    if not p:
        return
    theory = p["theoretical_bubble_pct"]
    _title(console, f"Pipeline: {len(p['stages'])} stages, "
                    f"{p['microbatches'] or 'unknown'} micro-batches, schedule "
                    f"{p['schedule'] or 'unknown'}, imbalance {p['imbalance']:.2f}x"
                    + ("" if theory is None else f", theoretical bubble {theory:.1f} %"))
    rows = p["stages"]
    columns = [
        Column("ranks", [_ranks_text(s["ranks"]) for s in rows], keep=5, justify="left"),
        time_column("compute/step", [s["compute_us"] for s in rows], keep=6),
        time_column("idle/step", [s["idle_us"] for s in rows], keep=6),
        pct_column("bubble", [s["bubble_pct"] for s in rows], keep=7),
        time_column("fwd/mb", [s["forward_us_per_microbatch"] for s in rows], keep=3),
        time_column("bwd/mb", [s["backward_us_per_microbatch"] for s in rows], keep=3),
    ]
    print_table(console, fit_table(console, "stage", [str(s["stage"]) for s in rows], columns,
                                   min_name=5))


def render_rank_part(console: Console, data: dict[str, Any]) -> None:
    """Single trace of a distributed job: this rank's communication split (no-op otherwise)."""
    part = data.get("distributed")
    if not part:
        return
    overlap = part["comm_overlap_pct"]
    console.print()
    hanging(console, "", Text.assemble(
        ("Distributed", "bold"),
        f" (rank {part['rank']} of {part['world_size']}, {part['backend']}): computation "
        f"{format_us(part['computation_us'])} · overlap {format_us(part['overlap_us'])} · "
        f"communication {format_us(part['communication_us'])} · other "
        f"{format_us(part['other_us'])} · comm/compute overlap "
        f"{MISSING if overlap is None else f'{overlap:.1f} %'} · "
        f"{count(part['calls'], 'collective call')}; report the run's folder for stragglers "
        "and sync/transfer"))
