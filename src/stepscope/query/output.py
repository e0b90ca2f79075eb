"""A query's result as text: an aligned table, CSV, JSON (a list of row objects) or Parquet."""

from __future__ import annotations

import io
import math
from decimal import Decimal
from typing import Any

import pyarrow as pa

from stepscope.errors import UsageError, one_line
from stepscope.shortnames import elide_middle

FORMATS = ("table", "csv", "json", "parquet")
CELL = 60  # widest cell of the text table (longer names keep their start and end)


def plain(value: Any) -> Any:
    """A JSON-able value: DuckDB's HUGEINT sums arrive as Decimal, NaN/inf as null."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, (bytes, bytearray)):
        return value.hex()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)  # dates, times, intervals


def rows(table: pa.Table) -> list[dict[str, Any]]:
    return [plain(r) for r in unique_names(table).to_pylist()]


def to_json(table: pa.Table) -> str:
    import msgspec

    return msgspec.json.format(msgspec.json.encode(rows(table)), indent=2).decode()


def to_csv(table: pa.Table) -> str:
    import csv

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    table = unique_names(table)
    writer.writerow(table.column_names)
    for r in table.to_pylist():
        writer.writerow(["" if v is None else _cell_text(plain(v)) for v in r.values()])
    return buf.getvalue()


def _cell_text(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, float):  # three decimals at most: µs to the ns
        return f"{value:.3f}".rstrip("0").rstrip(".") if value == value else "NaN"
    if isinstance(value, list):
        return "[" + ", ".join(_cell_text(v) for v in value) + "]"
    return str(value)


def _clip(text: str, width: int = CELL) -> str:
    return elide_middle(" ".join(text.split()), width)


def to_table(table: pa.Table, limit: int | None = None) -> str:
    """An aligned text table (numbers right-aligned), with a line saying how many rows."""
    table = unique_names(table)
    names = table.column_names
    if not names:
        return "(no result)\n"
    shown = table if limit is None or table.num_rows <= limit else table.slice(0, limit)
    body = [[_clip(_cell_text(plain(v))) for v in r.values()] for r in shown.to_pylist()]
    numeric = [pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
               or pa.types.is_decimal(f.type) for f in table.schema]
    widths = [max([len(n)] + [len(r[i]) for r in body]) for i, n in enumerate(names)]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if num else c.ljust(w)
                         for c, w, num in zip(cells, widths, numeric, strict=True)).rstrip()

    out = [line(names), line(["-" * w for w in widths]), *(line(r) for r in body)]
    more = table.num_rows - shown.num_rows
    tail = f"({table.num_rows} row{'s' if table.num_rows != 1 else ''}"
    tail += f", first {shown.num_rows} shown)" if more else ")"
    return "\n".join([*out, tail]) + "\n"


def parquet_bytes(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    try:
        pq.write_table(unique_names(table), sink)
    except pa.ArrowNotImplementedError as exc:  # an INTERVAL column, ...: no Parquet type
        raise UsageError(f"--format parquet: {one_line(str(exc))}; cast the column (to "
                         "VARCHAR, say) or use another format") from None
    return bytes(sink.getvalue().to_pybytes())


def encode(table: pa.Table, fmt: str) -> bytes:
    """``table`` in ``fmt`` (one of FORMATS)."""
    if fmt == "parquet":
        return parquet_bytes(table)
    if fmt == "json":
        return (to_json(table) + "\n").encode()
    if fmt == "csv":
        return to_csv(table).encode()
    if fmt == "table":
        return to_table(table).encode()
    raise UsageError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")


def unique_names(table: pa.Table) -> pa.Table:
    """Repeated column names (``SELECT *`` over a self-join) made unique: ``name``,
    ``name_1``, ...: the outputs that go by name (a JSON row is an object, the text table
    and CSV read rows as dicts, Parquet needs distinct names) would lose columns or misalign
    rows. The result itself keeps DuckDB's names (the dashboard's API sends rows as lists
    beside the names, where two columns may share one)."""
    seen: set[str] = set()
    names = []
    for name in table.column_names:
        new, i = name, 0
        while new in seen:
            i += 1
            new = f"{name}_{i}"
        seen.add(new)
        names.append(new)
    return table if names == table.column_names else table.rename_columns(names)
