"""How a metric is computed, from docs/metrics.md (the MCP server's ``explain_metric``).

docs/metrics.md is the one definition of every number; the wheel carries a copy of it as
``stepscope/report/metrics.md`` (``force-include`` in pyproject.toml), a source checkout
reads ``docs/metrics.md`` itself. A term is a section heading (``## Steps``) or a defined
term (a list item that opens with ``**GPU utilization**``); :func:`explain` finds the one a
name means (exact, then containing, then the closest spelling) and returns its text.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from stepscope.errors import UsageError

_PACKAGED = Path(__file__).with_name("metrics.md")
_CHECKOUT = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"
_HEADING = re.compile(r"^(#{2,4}) (.+?)\s*$")
_TERM = re.compile(r"^- \*\*(.+?)\*\*")
MAX_CHARS = 6000  # a long section is cut here (the rest: docs/metrics.md)


@dataclass(frozen=True)
class Entry:
    term: str  # "GPU utilization", "Steps"
    section: str  # the heading it is under ("GPU metrics (per device, over the step window)")
    text: str  # the definition: the list item, or the whole section


def metrics_text() -> str:
    for path in (_PACKAGED, _CHECKOUT):
        if path.is_file():
            return path.read_text(encoding="utf-8")
    raise UsageError("docs/metrics.md is not installed with this copy of stepscope")


def _key(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower().replace("`", "")))


@cache
def entries() -> tuple[Entry, ...]:
    lines = metrics_text().splitlines()
    found: list[Entry] = []
    headings = [(i, len(m.group(1)), m.group(2)) for i, line in enumerate(lines)
                if (m := _HEADING.match(line))]
    for n, (i, level, title) in enumerate(headings):
        end = next((j for j, lv, _ in headings[n + 1:] if lv <= level), len(lines))
        body = "\n".join(lines[i:end]).strip()
        found.append(Entry(title, title, body))
    section = ""
    for i, line in enumerate(lines):
        if m := _HEADING.match(line):
            section = m.group(2)
            continue
        if m := _TERM.match(line):
            j = i + 1
            while j < len(lines) and lines[j].startswith("  ") and lines[j].strip():
                j += 1
            found.append(Entry(m.group(1), section, "\n".join(lines[i:j])))
    return tuple(found)


def explain(name: str) -> Entry:
    """The entry ``name`` means; a UsageError listing close terms when none matches."""
    wanted = _key(name)
    if not wanted:
        raise UsageError("name a metric (e.g. 'GPU utilization', 'MFU', 'Steps')")
    all_entries = entries()
    keys = [_key(e.term) for e in all_entries]
    for i, k in enumerate(keys):
        if k == wanted:
            return all_entries[i]
    containing = [i for i, k in enumerate(keys) if wanted in k.split(" ") or
                  (len(wanted) > 3 and wanted in k)]
    if containing:
        return all_entries[min(containing, key=lambda i: len(keys[i]))]
    close = difflib.get_close_matches(wanted, keys, n=1, cutoff=0.6)
    if close:
        return all_entries[keys.index(close[0])]
    words = ", ".join(sorted({e.term for e in all_entries if not e.term.startswith("`")})[:40])
    raise UsageError(f"no metric called {name!r} in docs/metrics.md (terms: {words}, …)")


def clipped(text: str, limit: int = MAX_CHARS) -> str:
    if len(text) <= limit:
        return text
    return text[:limit].rsplit("\n", 1)[0] + "\n… (the rest: docs/metrics.md)"
