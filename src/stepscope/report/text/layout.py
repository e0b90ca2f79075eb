"""Width-aware building blocks of the terminal report.

The report must read well at 60, 80, 120 and 200 columns and when piped (80). Rules:
- number cells never wrap; a column carries its unit in the header, one unit per column;
- when a table is too wide, the least important columns go first, then names shrink;
- names shrink by stepscope.shortnames' one shortener: whole pieces only (parameters, lambdas,
  namespaces, nested then whole top-level template arguments), never fragments;
- wrapped prose keeps a hanging indent and breaks only at spaces (a path or a name longer
  than the line stays whole); code folds only where pasting still works (fold_code).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from rich._wrap import divide_line  # rich's word wrap, without folding long words
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from stepscope.shortnames import (
    collapse_templates,
    elide_middle,
    short_name,
    short_names,
    strip_params,
)
from stepscope.units import bytes_unit, column_unit, column_unit_ns

__all__ = ["collapse_templates", "short_name", "short_names", "strip_params"]  # names.py

MIN_NAME = 16  # narrowest name column before columns are dropped
MAX_NAME = 100  # wider names push the numbers too far from short names to read across
MISSING = "–"  # one mark for "not available" in every table
GAP = 2  # spaces between table columns


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
        return elide_middle(text, self.width)


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
    """The table line by line, without the spaces rich pads the last column with (trailing
    spaces make pasted output and diffs of reports noisy)."""
    options = console.options.update(width=max(console.width - indent, 1))
    for line in console.render_lines(fitted.table, options, pad=False, new_lines=False):
        text = Text(" " * indent)
        for seg in line:
            if not seg.control:
                text.append(seg.text, seg.style)
        text.rstrip()
        console.print(text, soft_wrap=True, highlight=False)
    if fitted.dropped:
        hanging(console, " " * indent, Text(
            "(narrow terminal: not shown " + ", ".join(fitted.dropped)
            + "; widen it or use --format json)", style="dim"))


# A unit stays on the line of its number ("6.2 %", "2.18 ms", "768 KiB"): the space between
# them becomes a private-use character while lines are divided.
_GLUE = "\ue000"
_UNIT_AFTER_NUMBER = re.compile(
    r"(?<=\d) (?=(?:%|ns|µs|ms|s|B|KiB|MiB|GiB|TiB|GB/s|TFLOP/s|qps|x)(?![\w/]))")


def hanging(console: Console, prefix: str, body: Text, *, extra: int = 0) -> None:
    """Print ``prefix`` + ``body`` wrapped to the console, continuation lines under the body.

    Lines break only at spaces: a word longer than the line (a path, a URL, a kernel name)
    stays whole on a line of its own, so a copy gives it back whole and the terminal wraps
    it softly."""
    width = max(console.width - len(prefix) - extra, 20)
    body = body.copy()
    body.plain = _UNIT_AFTER_NUMBER.sub(_GLUE, body.plain)  # same length: styles stay put
    lines = [piece for para in body.split("\n", allow_blank=True)
             for piece in (para.divide(divide_line(para.plain, width, fold=False))
                           if para.plain else [para])]
    for line in lines:
        line.plain = line.plain.replace(_GLUE, " ")
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


def is_python(code: str) -> bool:
    """Fix snippets are Python or a shell command line (trtexec, an environment variable)."""
    try:
        ast.parse(code)
    except SyntaxError:
        return False
    return True


def fold_code(code: str, width: int) -> list[str]:
    """``code``'s lines for ``width`` columns, each still valid when pasted: a trailing comment
    that does not fit goes above its line; a Python line breaks after a comma inside brackets
    (continuation indented four more); a shell line breaks at a space outside quotes, ending
    in `` \\``. A line with no such place stays whole (the terminal wraps it softly, and a
    copy gives it back whole): code is never cut mid-token."""
    code = comments_above(code, width)
    python = is_python(code)
    commas, semis = _python_breaks(code) if python else ({}, {})
    out: list[str] = []
    for row, line in enumerate(code.splitlines(), 1):
        if len(line) <= width:
            out.append(line)
        elif line.lstrip().startswith("#"):
            out += _fold_comment(line, width)
        elif python:
            out += _fold_python(line, commas.get(row, []), semis.get(row, []), width)
        else:
            out += _fold_at(line, _shell_spaces(line), width, " \\")
    return out


def _fold_comment(line: str, width: int) -> list[str]:
    """A comment line too long: more comment lines, broken at spaces."""
    lead = line[:len(line) - len(line.lstrip())] + "# "
    words = line.lstrip()[1:].split()
    out = [lead]
    for word in words:
        if len(out[-1]) > len(lead) and len(out[-1]) + 1 + len(word) > width:
            out.append(lead)
        out[-1] += ("" if out[-1] == lead else " ") + word
    return out


_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12+ tokenizes f-strings
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)


def _python_breaks(code: str) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Where a line may break: row -> columns just after each comma inside brackets (not
    inside an f-string), and row -> columns of each ``;`` between statements."""
    depth = fstring = 0
    commas: dict[int, list[int]] = {}
    semis: dict[int, list[int]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        fstring += (tok.type == _FSTRING_START) - (tok.type == _FSTRING_END)
        if tok.type != tokenize.OP or fstring:
            continue
        if tok.string in "([{":
            depth += 1
        elif tok.string in ")]}":
            depth -= 1
        elif tok.string == "," and depth > 0:
            commas.setdefault(tok.start[0], []).append(tok.end[1])
        elif tok.string == ";" and depth == 0:
            semis.setdefault(tok.start[0], []).append(tok.start[1])
    return commas, semis


def _fold_python(line: str, commas: list[int], semis: list[int], width: int) -> list[str]:
    """Statements joined by ``;`` on lines of their own, then each broken after commas."""
    lead = line[:len(line) - len(line.lstrip())]
    out: list[str] = []
    starts = [0, *(s + 1 for s in semis)]
    ends = [*semis, len(line)]
    for a, b in zip(starts, ends, strict=True):
        part = line[a:b].strip()
        shift = len(lead) - (a + len(line[a:b]) - len(line[a:b].lstrip()))
        cols = [c + shift for c in commas if a < c <= b]
        out += _fold_at(lead + part, cols, width, "")
    return out


def _shell_spaces(line: str) -> list[int]:
    """Columns of the spaces outside quotes, after the command's leading indent."""
    quote = ""
    spaces = []
    lead = len(line) - len(line.lstrip(" "))
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] == " "):
            break  # a comment: no continuation inside it
        elif ch == " " and i > lead and line[i - 1] != " ":
            spaces.append(i)
    return spaces


def _fold_at(line: str, breaks: Sequence[int], width: int, mark: str) -> list[str]:
    """Break ``line`` at the last allowed column that fits, again and again."""
    lead = " " * (len(line) - len(line.lstrip(" ")))
    breaks = [b for b in breaks if b < len(line.rstrip())]  # not after a trailing comma
    pieces: list[str] = []
    start, room = 0, width
    while len(line) - start > room:
        fits = [b for b in breaks if start < b and b - start + len(mark) <= room]
        later = [b for b in breaks if b > start]
        cut = fits[-1] if fits else (later[0] if later else None)
        if cut is None:
            break
        pieces.append(line[start:cut].rstrip() + mark)
        start = cut + len(line[cut:]) - len(line[cut:].lstrip(" "))
        room = width - len(lead) - 4
    rest = line[start:]
    pieces.append(rest if not pieces else rest.lstrip(" "))
    return [p if i == 0 else lead + "    " + p for i, p in enumerate(pieces)]


def code_block(console: Console, code: str, indent: int) -> None:
    """Highlighted code, indented, folded by :func:`fold_code` so every line pastes whole."""
    width = max(console.width - indent, 20)
    folded = "\n".join(fold_code(code, width))
    text = Syntax(folded, "python" if is_python(folded) else "bash",
                  theme="ansi_dark").highlight(folded)
    text.rstrip()
    for line in text.split("\n", allow_blank=True):
        line.rstrip()
        console.print(Text(" " * indent) + line, soft_wrap=True, highlight=False)
