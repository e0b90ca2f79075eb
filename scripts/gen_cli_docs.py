"""Write the option tables of docs/cli.md from the commands' argparse definitions.

Each command's table sits between ``<!-- options: NAME -->`` and ``<!-- /options -->`` in
docs/cli.md; the prose around the tables is written by hand. tests/unit/test_cli_docs.py
fails when a table drifts from the code; run this script to bring them back in line:

    python scripts/gen_cli_docs.py          # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check  # exit 1 when it would change
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BLOCK = re.compile(r"(<!-- options: (?P<name>[a-z]+) -->\n)(?P<body>.*?)(<!-- /options -->)",
                   re.S)


def _parser(name: str) -> argparse.ArgumentParser:
    from stepscope.cli.main import COMMANDS, HELPS, OneLineParser, _load

    assert name in COMMANDS, name
    sub = OneLineParser(prog=f"stepscope {name}", description=HELPS[name])
    _load(name).add_arguments(sub)
    return sub


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _option(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest.upper()}`"
    flag = max(action.option_strings, key=len)
    if action.nargs == 0:
        return f"`{flag}`"
    if action.choices is not None:
        return f"`{flag} {'|'.join(str(c) for c in action.choices)}`"
    metavar = action.metavar or action.dest.upper()
    return f"`{flag} {metavar}`"


def _help(action: argparse.Action, parser: argparse.ArgumentParser) -> str:
    text = parser._get_formatter()._expand_help(action) if action.help else ""
    if action.nargs in ("+", "*") and not action.option_strings:
        text += " (one or more)"
    return text


def table(name: str) -> str:
    """The markdown options table of ``stepscope NAME``."""
    parser = _parser(name)
    rows = ["| option | meaning |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        rows.append(f"| {_cell(_option(action))} | {_cell(_help(action, parser))} |")
    return "\n".join(rows) + "\n"


def render(doc: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + table(m.group("name")) + m.group(4), doc)


def documented(doc: str) -> set[str]:
    return {m.group("name") for m in BLOCK.finditer(doc)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/cli.md would change")
    args = ap.parse_args()
    doc = DOC.read_text(encoding="utf-8")
    new = render(doc)
    if args.check:
        return 0 if new == doc else 1
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
