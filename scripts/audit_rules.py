"""Run every advisor rule over every real trace and print the rule × trace table.

For docs/advice.md's audit: which rules fire (with severity) and which stay silent on each
trace of ../shared/traces (Kineto JSON and Nsight Systems exports), plus each firing's
title, evidence and fix for the review of whether the evidence supports the claim:

    python scripts/audit_rules.py [--traces ../shared/traces] [--details OUT.md]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

SUFFIXES = (".json", ".json.gz", ".sqlite")
SKIP_PARTS = ("tensorrt",)  # engine outputs have their own advisor (TRT_RULES)


def traces(root: Path) -> list[Path]:
    out = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and p.name.endswith(SUFFIXES) and rel.parts[0] not in SKIP_PARTS:
            out.append(p)
    return out


def findings(path: Path) -> list[dict[str, Any]] | str:
    """The report's findings, or the one-line reason the file is not a trace."""
    from stepscope.errors import StepscopeError
    from stepscope.formats import load_trace
    from stepscope.report.build import build_report

    try:
        data = build_report(load_trace(str(path))).to_json()
    except StepscopeError as exc:
        return str(exc)
    return list(data["findings"])


def matrix(root: Path) -> tuple[dict[str, dict[str, str]], list[str]]:
    """rel path -> {rule id: severity letter} for every trace under ``root``, and each
    firing in full (markdown) for the review."""
    rows: dict[str, dict[str, str]] = {}
    details: list[str] = []
    for path in traces(root):
        rel = path.relative_to(root).as_posix()
        got = findings(path)
        if isinstance(got, str):
            continue  # not a trace (a memory timeline, a snapshot, ...)
        rows[rel] = {f["id"]: f["severity"][0].upper() for f in got}
        for f in got:
            details += [f"### {rel}: {f['id']} [{f['severity']}]", f"**{f['title']}**", ""]
            details += [f"- {e}" for e in f.get("evidence", [])]
            details += ["", f"fix: {f['fix']['text']}", ""]
            if f["fix"].get("code"):
                details += ["```python", f["fix"]["code"], "```", ""]
    return rows, details


def render(rows: dict[str, dict[str, str]]) -> str:
    """The rule × trace table (severity letter or ·) and the key of trace names, as in
    docs/advice.md's "Audit on real traces"."""
    from stepscope.advice.rules import RULES

    short = {rel: f"T{i + 1}" for i, rel in enumerate(rows)}
    out = ["| rule | " + " | ".join(short.values()) + " |",
           "|---|" + "---|" * len(short)]
    for rule in RULES:
        cells = [rows[rel].get(rule, "·") for rel in rows]
        out.append(f"| {rule} | " + " | ".join(cells) + " |")
    out.append("")
    out += [f"- {key}: `{rel}`" for rel, key in short.items()]
    return "\n".join(out) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--traces", default=str(Path(__file__).resolve().parents[2] / "shared"
                                              / "traces"))
    ap.add_argument("--details", default=None, help="also write every firing in full here")
    args = ap.parse_args()
    rows, details = matrix(Path(args.traces))
    sys.stdout.write(render(rows))
    if args.details:
        Path(args.details).write_text("\n".join(details) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
