"""Width-aware building blocks of the terminal report.

The report must read well at 60, 80, 120 and 200 columns and when piped (80). Rules:
- number cells never wrap; a column carries its unit in the header, one unit per column;
- when a table is too wide, the least important columns go first, then names shrink;
- names shrink by dropping C++ parameters, then nested template arguments, then the middle,
  keeping the tail that tells similar kernels apart;
- wrapped prose keeps a hanging indent; code is never cut (long lines fold) nor padded.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from stepscope.units import bytes_unit, column_unit, column_unit_ns

MIN_NAME = 16  # narrowest name column before columns are dropped
MAX_NAME = 100  # wider names push the numbers too far from short names to read across
MISSING = "–"  # one mark for "not available" in every table
GAP = 2  # spaces between table columns


def strip_params(name: str) -> str:
    """Drop a trailing C++ parameter list: 'f<T>(int, float)' -> 'f<T>'."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i] if i > 0 else name
    return name


def collapse_templates(name: str, keep: int = 1) -> str:
    """Elide template arguments nested deeper than ``keep``: 'a<b<c>, d>' -> 'a<b<…>, d>'."""
    out = []
    depth = 0
    for ch in name:
        if ch == "<":
            if depth == keep:
                out.append("<…")
            elif depth < keep:
                out.append(ch)
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
            if depth <= keep:
                out.append(">")
        elif depth <= keep:
            out.append(ch)
    return "".join(out).replace("::(anonymous namespace)::", "::")


_NAMESPACES = re.compile(r"\b(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~])")


def short_name(name: str, width: int) -> str:
    """A one-line name of at most ``width`` characters that keeps what tells names apart.

    Shrinks in the order that loses least: 'void ', the parameter list, namespace
    qualifiers, nested template arguments, and last the middle (head and tail stay).
    """
    if len(name) <= width:
        return name
    short = strip_params(name.removeprefix("void "))
    if len(short) > width:
        short = _NAMESPACES.sub("", short.replace("::(anonymous namespace)::", "::"))
    if len(short) > width:
        short = collapse_templates(short)
    if len(short) <= width:
        return short
    if width < 8:
        return short[: max(width - 1, 0)] + "…"
    head = max(width // 3, 4)  # the function's name ...
    tail = width - head - 1  # ... and the end, where template arguments differ
    return short[:head] + "…" + short[-tail:]


def _plain(name: str) -> str:
    """The name without 'void ', parameters and namespaces (template arguments kept)."""
    bare = strip_params(name.removeprefix("void ")).replace("::(anonymous namespace)::", "::")
    return _NAMESPACES.sub("", bare)


def _common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _around(text: str, width: int, pos: int) -> str:
    """head…window around ``pos``…tail: shows where two similar names differ."""
    head = tail = max(width // 5, 3)
    mid = width - head - tail - 2
    if mid < 4 or len(text) <= width:
        return text[:width]
    start = max(head, min(pos - mid // 3, len(text) - tail - mid))
    return text[:head] + "…" + text[start:start + mid] + "…" + text[-tail:]


def short_names(names: Sequence[str], width: int) -> list[str]:
    """``short_name`` for each, then distinct names that came out equal are shown again
    around the first place where they differ."""
    shorts = [short_name(n, width) for n in names]
    groups: dict[str, list[int]] = {}
    for i, s in enumerate(shorts):
        groups.setdefault(s, []).append(i)
    for members in groups.values():
        fulls = {names[i] for i in members}
        if len(fulls) < 2:
            continue
        # the shortest spelling under which they still differ ('A::compile' and
        # 'B::compile' are both 'compile' once namespaces go)
        plains = next(
            p for p in ([_plain(names[i]) for i in members],
                        [strip_params(names[i].removeprefix("void ")) for i in members],
                        [names[i] for i in members])
            if len(set(p)) == len(fulls))
        # Show each around where it last parts from a neighbour; names that differ in two
        # places (conv5_block1, conv2_block1, conv5_block2) may need the first place, or
        # a window over both.
        parts = [[_common_prefix(p, o) for o in plains if o != p] for p in plains]
        tries = [[_around(p, width, pick(at)) for p, at in zip(plains, parts, strict=True)]
                 for pick in (max, min, lambda at: (min(at) + max(at)) // 2)]
        best = next((t for t in tries if len(set(t)) == len(set(plains))), tries[0])
        for i, short in zip(members, best, strict=True):
            shorts[i] = short
    return shorts


@dataclass(frozen=True)
class Column:
    """A right-aligned column: its header, its cells, and how much it matters (higher stays)."""

    header: str
    cells: list[str]
    keep: int = 0
    justify: Literal["left", "right"] = "right"
    style: str | None = None
    max_width: int | None = None  # text columns (shapes): longer cells lose their middle

    @property
    def width(self) -> int:
        longest_word = max((len(w) for w in self.header.split()), default=0)
        widest = max([longest_word, *(len(c) for c in self.cells)])
        return widest if self.max_width is None else min(widest, max(self.max_width, 8))

    def cell(self, i: int) -> str:
        text = self.cells[i]
        if len(text) <= self.width:
            return text
        head = (self.width * 3) // 4  # the start of a shape list is its first input
        return text[:head] + "…" + text[-(self.width - head - 1):]


def time_column(header: str, values_us: Sequence[float | None], keep: int = 0) -> Column:
    """Durations in one unit for the column, named in the header: 'self (ms)'; None reads
    MISSING."""
    unit, div, fmt = column_unit(v for v in values_us if v is not None)
    return Column(f"{header} ({unit})",
                  [MISSING if v is None else fmt.format(v / div) for v in values_us], keep)


def ns_column(header: str, values_ns: Sequence[float], keep: int = 0) -> Column:
    """``time_column`` for durations in ns (Nsight Systems): 'total (ms)', 'med (ns)'."""
    unit, div, fmt = column_unit_ns(values_ns)
    return Column(f"{header} ({unit})", [fmt.format(v / div) for v in values_ns], keep)


def text_column(header: str, values: Sequence[str | None], keep: int = 0,
                max_width: int | None = None) -> Column:
    """Left-aligned words (a type, a precision); missing values read MISSING."""
    return Column(header, [MISSING if v is None or v == "" else v for v in values], keep,
                  justify="left", max_width=max_width)


def bytes_column(header: str, values: Sequence[float], keep: int = 0) -> Column:
    """Byte counts in one binary unit for the column: 'alloc size (MiB)'."""
    unit, div, fmt = bytes_unit(values)
    return Column(f"{header} ({unit})", [fmt.format(v / div) for v in values], keep)


def count_column(header: str, values: Sequence[int], keep: int = 0) -> Column:
    return Column(header, [f"{v:,}" for v in values], keep)


def pct_column(header: str, values: Sequence[float | None], keep: int = 0,
               digits: int = 1) -> Column:
    return Column(f"{header} (%)",
                  [MISSING if v is None else f"{v:.{digits}f}" for v in values], keep)


def _header_lines(header: str, width: int) -> str:
    """Wrap a header on words to the column's width (cells decide the width, not headers)."""
    lines: list[str] = []
    for word in header.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


@dataclass
class FittedTable:
    table: Table
    dropped: list[str] = field(default_factory=list)


def fit_table(console: Console, name_header: str, names: Sequence[str],
              columns: Sequence[Column], *, indent: int = 0,
              name_style: str | None = None, min_name: int = MIN_NAME) -> FittedTable:
    """A table as wide as the console at most: drop low-``keep`` columns, then shrink names.

    Names arrive raw (not markup); they are shortened here and never interpreted as markup.
    """
    available = console.width - indent
    cols = list(columns)
    dropped: list[str] = []

    def needed(cs: list[Column]) -> int:
        return sum(c.width for c in cs) + GAP * len(cs)

    while cols and needed(cols) + min_name > available:
        victim = min(range(len(cols)), key=lambda i: (cols[i].keep, -i))
        gone = cols.pop(victim)
        if gone.header:
            dropped.append(gone.header)
    longest = max((len(n) for n in names), default=0)
    name_width = max(min(longest, available - needed(cols), MAX_NAME),
                     min(min_name, available), 4)
    name_width = max(name_width, len(name_header) if longest >= len(name_header) else 0)
    table = Table(box=None, show_edge=False, pad_edge=False, padding=(0, 0, 0, GAP),
                  collapse_padding=True, show_header=True, header_style="bold")
    table.add_column(name_header, no_wrap=True, width=name_width, style=name_style)
    for c in cols:
        # rich counts the left padding inside a column's width
        table.add_column(_header_lines(c.header, c.width), justify=c.justify, no_wrap=True,
                         width=c.width + GAP, style=c.style)
    for i, name in enumerate(short_names(names, name_width)):
        table.add_row(Text(name), *(Text(c.cell(i)) for c in cols))
    table.columns[0].header = name_header
    return FittedTable(table, dropped)


def print_table(console: Console, fitted: FittedTable, *, indent: int = 0) -> None:
    if indent:
        from rich.padding import Padding

        console.print(Padding(fitted.table, (0, 0, 0, indent), expand=False))
    else:
        console.print(fitted.table)
    if fitted.dropped:
        hanging(console, " " * indent, Text(
            "(narrow terminal: not shown " + ", ".join(fitted.dropped)
            + "; widen it or use --format json)", style="dim"))


def hanging(console: Console, prefix: str, body: Text, *, extra: int = 0) -> None:
    """Print ``prefix`` + ``body`` wrapped to the console, continuation lines under the body."""
    width = max(console.width - len(prefix) - extra, 20)
    lines = body.wrap(console, width, overflow="fold")
    for i, line in enumerate(lines):
        line.rstrip()
        lead = prefix if i == 0 else " " * (len(prefix) + extra)
        console.print(Text(lead) + line, soft_wrap=True, highlight=False)


_TRAILING_COMMENT = re.compile(r"^(?P<lead>\s*)(?P<code>\S.*?)\s{2,}(?P<comment>#.*)$")


def comments_above(code: str, width: int) -> str:
    """Move a trailing comment that would not fit onto its own line above its code line,
    so copy-pasted code stays valid and nothing folds mid-comment."""
    out = []
    for line in code.splitlines():
        m = _TRAILING_COMMENT.match(line)
        if len(line) > width and m:
            out += [m["lead"] + m["comment"], m["lead"] + m["code"]]
        else:
            out.append(line)
    return "\n".join(out)


def say(console: Console, markup: str) -> None:
    """Print one line of rich markup wrapped to the console; continuation lines keep the
    line's own indent plus two."""
    text = Text.from_markup(markup)
    lead = len(text.plain) - len(text.plain.lstrip(" "))
    hanging(console, " " * lead, text[lead:], extra=2)


def code_block(console: Console, code: str, indent: int) -> None:
    """Highlighted code, indented, never cut: a line longer than the terminal folds."""
    width = max(console.width - indent - 2, 20)  # room for the continuation indent
    code = comments_above(code, width + 2)
    text = Syntax(code, "python", theme="ansi_dark").highlight(code)
    text.rstrip()
    for line in text.split("\n", allow_blank=True):
        line.rstrip()
        pieces = line.wrap(console, width, overflow="fold", no_wrap=False) if line else [line]
        for j, piece in enumerate(pieces):
            lead = " " * (indent if j == 0 else indent + 2)
            console.print(Text(lead) + piece, soft_wrap=True, highlight=False)
