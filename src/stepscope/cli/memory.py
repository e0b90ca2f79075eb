"""``stepscope memory PATH``: analyse an allocator snapshot or a memory timeline."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from stepscope.analysis.memory_timeline import category_timeline
from stepscope.analysis.snapshot import snapshot_analysis
from stepscope.errors import TraceFormatError
from stepscope.formats.memory_timeline import looks_like_timeline, timeline_from_json
from stepscope.formats.snapshot import PICKLE_PROTO, loads_plain, snapshot_from_data
from stepscope.io.source import read_source
from stepscope.report.memory_json import snapshot_json, timeline_json
from stepscope.report.text import format_us
from stepscope.units import format_bytes as fmt_bytes


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="torch.cuda.memory snapshot (.pickle) or memory timeline "
                                     "(.raw.json.gz / .json from export_memory_timeline)")
    parser.add_argument("--format", choices=("text", "json"), default="text")


def analyse(path: str) -> dict[str, Any]:
    """``{"kind": "snapshot"|"timeline", "result": {...}}`` for a snapshot or timeline file."""
    data = read_source(path).data
    if bytes(data[:1]) == PICKLE_PROTO:
        from stepscope.advice.snapshot_rules import snapshot_findings

        result = snapshot_analysis(snapshot_from_data(loads_plain(data, path), path))
        return {"kind": "snapshot", "result": snapshot_json(result),
                "findings": [f.to_json() for f in snapshot_findings(result)]}
    if looks_like_timeline(data) or bytes(data[:64]).lstrip().lower().startswith(b"<"):
        return {"kind": "timeline", "result": timeline_json(category_timeline(
            timeline_from_json(data, path)))}
    raise TraceFormatError(f"{path}: neither a memory snapshot pickle nor a memory timeline "
                           "(for traces use: stepscope report)")


def run(args: argparse.Namespace) -> int:
    out = analyse(args.path)
    if args.format == "json":
        sys.stdout.write(json.dumps(out, indent=1) + "\n")
        return 0
    console = Console()
    r = out["result"]
    if out["kind"] == "timeline":
        console.print(f"[bold]Memory timeline[/]: peak {fmt_bytes(r['peak_bytes'])} at "
                      f"{format_us(r['peak_us'])}")
        for cat, b in sorted(r["at_peak_bytes"].items(), key=lambda kv: -kv[1]):
            if b:
                console.print(f"  {cat:<16} {fmt_bytes(b):>12}")
        return 0
    for f in out["findings"]:
        console.print(f"[bold red]{escape(f['title'])}[/] [{f['severity']}]")
        for line in f["evidence"]:
            console.print(f"  • {escape(line)}")
        console.print(f"  [bold green]fix:[/] {escape(f['fix']['text'])}")
    for d in r["devices"]:
        console.print(f"[bold]GPU {d['device']}[/]: reserved {fmt_bytes(d['reserved_bytes'])}, "
                      f"allocated {fmt_bytes(d['allocated_bytes'])}, inactive "
                      f"{fmt_bytes(d['inactive_bytes'])} ({d['fragmentation_pct']:.1f} %; "
                      f"{d['split_inactive_blocks']} split blocks, "
                      f"{fmt_bytes(d['split_inactive_bytes'])})")
        if d["peak_allocated_bytes"] is not None:
            console.print(f"  trace: {d['trace_entries']:,} entries, peak allocated "
                          f"{fmt_bytes(d['peak_allocated_bytes'])}")
        for o in d["ooms"]:
            console.print(f"  [red]out of memory[/]: asked {fmt_bytes(o['requested_bytes'])} "
                          f"with {fmt_bytes(o['allocated_bytes'])} allocated, "
                          f"{fmt_bytes(o['device_free_bytes'])} free on the device")
        for title, sites in (("live now", d["sites"]), ("live at the peak", d["peak_sites"])):
            if sites:
                console.print(f"  top allocation sites, {title}:")
                for s in sites[:5]:
                    console.print(f"    {fmt_bytes(s['bytes']):>12}  {escape(s['site'][:100])}")
    return 0
