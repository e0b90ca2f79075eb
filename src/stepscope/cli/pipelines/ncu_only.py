"""``stepscope report kernels.csv``: an Nsight Compute export on its own (no timeline)."""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console

from stepscope.analysis.nsight.ncu_join import join_ncu
from stepscope.model.ncu import NcuReport
from stepscope.report.build import SCHEMA
from stepscope.report.json.ncu import ncu_json
from stepscope.report.json.render import strict_json
from stepscope.report.text.ncu import render_ncu


def run_ncu_only(report: NcuReport, fmt: str, top: int) -> int:
    ncu = ncu_json(join_ncu(report, None))
    if ncu is not None:
        ncu["matched"] = None  # no trace to match to
    data: dict[str, Any] = {
        "schema": SCHEMA,
        "source": {"path": report.path, "format": "ncu", "events": len(report.kernels),
                   "vendor": "nvidia", "rank": None, "world_size": None,
                   "skipped": dict(report.skipped), "warnings": [],
                   "partial": bool(report.skipped)},
        "ncu": ncu,
    }
    if fmt == "json":
        sys.stdout.write(strict_json(data) + "\n")
    else:
        console = Console()
        console.rule(f"stepscope report — {report.path}")
        for reason, n in sorted(report.skipped.items()):
            console.print(f"note: {n:,} {reason} skipped; the complete rows are reported",
                          markup=False, highlight=False)
        render_ncu(ncu, console, top)
    return 0
