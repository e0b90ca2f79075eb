"""Text sections of a run's all-to-all traffic and FSDP units (from the JSON report)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.report.text.layout import (
    MISSING,
    Column,
    bytes_column,
    fit_table,
    hanging,
    pct_column,
    print_table,
    text_column,
    time_column,
)
from stepscope.units import count


def _title(console: Console, title: str) -> None:
    console.print()
    console.print(Text(title, style="bold"))


def render_all_to_all(console: Console, a: dict[str, Any] | None, top: int) -> None:
    if a is None:
        return
    _title(console, "All-to-all traffic (expert parallelism)")
    if not a["ranks"]:
        hanging(console, "", Text(f"{a['unmapped_calls']} all-to-all calls whose peers' global "
                                  "ranks the trace does not give: no traffic matrix"))
        return
    received = a["received_bytes"]
    mean = sum(received) / len(received)
    order = sorted(range(len(received)), key=lambda k: -received[k])[:top]
    hanging(console, "", Text(
        f"{count(a['calls'], 'call')} per rank · max/mean received {a['imbalance']:.2f} · "
        "hot ranks: "
        f"{', '.join(map(str, a['hot_ranks'])) or 'none'} · the rank x rank matrix is "
        "distributed.all_to_all.matrix_bytes in the JSON report"))
    columns = [
        bytes_column("sent", [a["sent_bytes"][k] for k in order], keep=5),
        bytes_column("received", [received[k] for k in order], keep=6),
        Column("received / mean", [f"{received[k] / mean:.2f}" if mean else MISSING
                                   for k in order], keep=4),
    ]
    print_table(console, fit_table(console, "rank", [str(a["ranks"][k]) for k in order],
                                   columns, min_name=4))


def render_fsdp(console: Console, f: dict[str, Any] | None, top: int) -> None:
    if f is None or not f["units"]:
        return
    _title(console, f"FSDP units ({f['version']}; per rank, all steps; overlap = time "
                    "covered by computation)")
    units = sorted(f["units"], key=lambda u: -u["exposed_us"])[:top]
    columns = [
        text_column("collective", [u["kind"].replace("_", "-") for u in units], keep=6),
        Column("calls", [f"{u['calls']:g}" for u in units], keep=2),
        bytes_column("bytes", [u["bytes"] or 0 for u in units], keep=1),
        time_column("time", [u["time_us"] for u in units], keep=5),
        time_column("exposed", [u["exposed_us"] for u in units], keep=6),
        pct_column("overlap", [u["overlap_pct"] for u in units], keep=4),
    ]
    print_table(console, fit_table(console, "unit", [u["unit"] or MISSING for u in units],
                                   columns, min_name=4))
