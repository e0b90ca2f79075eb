"""Terminal sections: the critical path (report) and what-if replays (report and
``stepscope whatif``). Both read the JSON documents, so the two outputs agree."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from stepscope.report.text.layout import hanging
from stepscope.units import format_us

NAME_CHARS = 90  # kernel names run to hundreds of characters: the JSON has them whole
LABELS = {"cpu": "CPU", "gpu_compute": "GPU compute", "launch_overhead": "launch overhead",
          "kernel_to_kernel": "kernel-to-kernel", "sync": "synchronisation",
          "communication": "communication", "data_loading": "data loading",
          "other": "before the path"}


def render_critical(console: Console, cp: dict[str, Any] | None) -> None:
    if not cp or not cp.get("windows"):
        return
    console.print()
    head = Text("Critical path", style="bold")
    head.append(f" (longest dependency chain, HTA's definition; mean of {cp['windows']} "
                f"window{'s' if cp['windows'] != 1 else ''}): ")
    head.append(format_us(cp["length_us"]), style="bold")
    head.append(f" of {format_us(cp['window_us'])}")
    hanging(console, "", head)
    shares = sorted(((v, k) for k, v in cp["bound_by_pct"].items() if v >= 0.05), reverse=True)
    hanging(console, "  ", Text("bound by: " + ", ".join(f"{LABELS[k]} {v:.1f} %"
                                                         for v, k in shares)))
    for e in cp["top_events"][:5]:
        name = e["name"] if len(e["name"]) <= NAME_CHARS else e["name"][:NAME_CHARS - 1] + "…"
        hanging(console, "  • ", Text(f"{format_us(e['on_path_us'])} {name} "
                                      f"({LABELS.get(e['category'], e['category'])})"))


def _row(by: dict[str, float], key: str) -> str:
    return format_us(by.get(key, 0.0))


def render_whatif(doc: dict[str, Any] | None, console: Console, *,
                  title: str = "What if") -> None:
    if not doc:
        return
    b, a = doc["before"], doc["after"]
    console.print()
    head = Text(title, style="bold")
    head.append(" (replayed step, docs/whatif.md): ")
    head.append(f"{format_us(b['step_us'])} → ", style="")
    head.append(format_us(a["step_us"]), style="bold")
    head.append(f" per step ({doc['saving_pct']:.1f} % saved)")
    hanging(console, "", head)
    applied = ", ".join(f"{x.get('apply', x['transform'])} ({x['events']} events)"
                        for x in doc["applied"])
    hanging(console, "  ", Text("applied: " + applied, style="dim"))
    width = max(len(v) for v in LABELS.values())
    for key, label in LABELS.items():
        before, after = b["by_category_us"].get(key, 0.0), a["by_category_us"].get(key, 0.0)
        if before == 0 and after == 0:
            continue
        console.print(f"  {label:<{width}}  {_row(b['by_category_us'], key):>12}"
                      f"  → {_row(a['by_category_us'], key):>12}", highlight=False)
