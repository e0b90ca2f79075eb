"""``stepscope memory PATH``: analyse an allocator snapshot or a memory timeline."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.analysis.memory.snapshot import snapshot_analysis
from stepscope.analysis.memory.timeline import category_timeline
from stepscope.errors import TraceFormatError
from stepscope.formats.memory.snapshot import loads_plain, snapshot_from_data
from stepscope.formats.memory.timeline import timeline_from_json
from stepscope.io.source import read_source
from stepscope.report.json.memory import snapshot_json, timeline_json
from stepscope.report.json.render import strict_json
from stepscope.report.text.layout import bytes_column, fit_table, hanging, print_table, say
from stepscope.units import format_bytes as fmt_bytes
from stepscope.units import format_us


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="torch.cuda.memory snapshot (.pickle) or memory timeline "
                                     "(.raw.json.gz / .json from export_memory_timeline)")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: the terminal view; json: the result as one JSON object "
                        "(default: %(default)s)")


def analyse(path: str) -> dict[str, Any]:
    """``{"kind": "snapshot"|"timeline", "result": {...}}`` for a snapshot or timeline file."""
    from stepscope.formats import kinds

    kind = kinds.identify(path)
    pipeline = kind.pipeline(kinds.MEMORY)
    if pipeline == "snapshot":
        from stepscope.advice.rules.memory.snapshot import snapshot_findings

        data = read_source(path).data
        result = snapshot_analysis(snapshot_from_data(loads_plain(data, path), path))
        return {"kind": "snapshot", "result": snapshot_json(result),
                "findings": [f.to_json() for f in snapshot_findings(result)]}
    if pipeline == "timeline":
        return {"kind": "timeline", "result": timeline_json(category_timeline(
            timeline_from_json(read_source(path).data, path)))}
    if kind in (kinds.TRTEXEC, kinds.REMOTE_TRTEXEC):  # trtexec's profile is a JSON list too
        raise TraceFormatError(f"{path}: a TensorRT trtexec export, not a memory snapshot or "
                               "timeline (for engines use: stepscope report)")
    raise TraceFormatError(f"{path}: neither a memory snapshot pickle nor a memory timeline "
                           "(for traces use: stepscope report)")


def run(args: argparse.Namespace) -> int:
    out = analyse(args.path)
    if args.format == "json":
        sys.stdout.write(strict_json(out) + "\n")
        return 0
    render_memory_text(out, Console())
    return 0


def render_memory_text(out: dict[str, Any], console: Console) -> None:
    """The text form of :func:`analyse`'s result, wrapped to the console's width."""
    r = out["result"]
    if out["kind"] == "timeline":
        say(console, f"[bold]Memory timeline[/]: peak {fmt_bytes(r['peak_bytes'])} at "
                     f"{format_us(r['peak_us'])}")
        cats = [(c, b) for c, b in sorted(r["at_peak_bytes"].items(), key=lambda kv: -kv[1])
                if b]
        if cats:
            print_table(console, fit_table(
                console, "category", [c for c, _ in cats],
                [bytes_column("size", [b for _, b in cats], keep=9)], indent=2), indent=2)
        return
    for f in out["findings"]:
        head = Text(f["title"], style="bold red")
        head.append(f" [{f['severity']}]", style="")
        hanging(console, "", head)
        for line in f["evidence"]:
            hanging(console, "  • ", Text(line))
        fix = Text("fix: ", style="bold green")
        fix.append(f["fix"]["text"])
        hanging(console, "  ", fix, extra=2)
    for d in r["devices"]:
        say(console, f"[bold]GPU {d['device']}[/]: reserved {fmt_bytes(d['reserved_bytes'])}, "
                     f"allocated {fmt_bytes(d['allocated_bytes'])}, inactive "
                     f"{fmt_bytes(d['inactive_bytes'])} ({d['fragmentation_pct']:.1f} %; "
                     f"{d['split_inactive_blocks']} split blocks, "
                     f"{fmt_bytes(d['split_inactive_bytes'])})")
        if d["peak_allocated_bytes"] is not None:
            say(console, f"  trace: {d['trace_entries']:,} entries, peak allocated "
                         f"{fmt_bytes(d['peak_allocated_bytes'])}")
        for o in d["ooms"]:
            say(console, f"  [red]out of memory[/]: asked {fmt_bytes(o['requested_bytes'])} "
                         f"with {fmt_bytes(o['allocated_bytes'])} allocated, "
                         f"{fmt_bytes(o['device_free_bytes'])} free on the device")
        for title, sites in (("live now", d["sites"]), ("live at the peak", d["peak_sites"])):
            if sites:
                say(console, f"  top allocation sites, {title}:")
                top = sites[:5]
                print_table(console, fit_table(
                    console, "site", [s["site"] for s in top],
                    [bytes_column("size", [s["bytes"] for s in top], keep=9)], indent=4),
                    indent=4)
