"""The layout stays readable (docs/architecture.md): small folders named for what they hold."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "stepscope"
MAX_MODULES = 15


def _folders() -> list[Path]:
    return [d for d in [SRC, *SRC.rglob("*")] if d.is_dir() and (d / "__init__.py").is_file()]


def test_no_folder_holds_more_than_15_modules() -> None:
    big = {str(d.relative_to(SRC)): n for d in _folders()
           if (n := len([p for p in d.glob("*.py") if p.name != "__init__.py"])) > MAX_MODULES}
    assert not big


def test_no_three_modules_share_a_name_prefix() -> None:
    """Once a folder names the subject, its modules do not repeat it (kineto_*, text_*, ...)."""
    crowded = {}
    for d in _folders():
        stems = [p.stem.lstrip("_") for p in d.glob("*.py") if p.name != "__init__.py"]
        prefixes = Counter(s.split("_")[0] for s in stems if "_" in s)
        crowded.update({f"{d.relative_to(SRC)}/{k}_*": n for k, n in prefixes.items() if n >= 3})
    assert not crowded


SNIFFING = re.compile(r"looks_like|sniff|content_kind|read_head|read_url_head|is_trtexec_output"
                      r"|\\x80|SQLite format|b'\"schema|traceEvents|isdir")


def test_cli_does_not_sniff_inputs() -> None:
    """What an input is, formats.kinds alone decides; cli/ only asks it (identify)."""
    found = [f"{p.name}:{i}" for p in sorted((SRC / "cli").glob("*.py"))
             for i, line in enumerate(p.read_text().splitlines(), 1) if SNIFFING.search(line)]
    assert not found
