"""What an Nsight Systems SQLite export contains, and SQL that tolerates its versions.

Exports create tables lazily (only kinds with data exist), and columns are added and
renamed across schema versions (docs/metrics.md "Nsight Systems"). Every reader query is
built from ``Schema``: a column that is absent becomes a constant, a table that is absent
reads as empty.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

# Alternative spellings seen across versions, newest first.
META_TABLES = ("META_DATA_EXPORT", "EXPORT_META_DATA")
STRING_TABLES = ("StringIds", "StringTable")
GPU_TABLES = ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_GPU")

# Tables whose presence marks a database as an nsys export.
MARKERS = frozenset(
    {*STRING_TABLES, *META_TABLES, "CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS", "ThreadNames"}
)


@dataclass(frozen=True)
class Schema:
    """Tables and their columns, read from ``sqlite_master``."""

    tables: dict[str, frozenset[str]]

    @classmethod
    def probe(cls, con: sqlite3.Connection) -> Schema:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        tables: dict[str, frozenset[str]] = {}
        for name in names:
            if not name.replace("_", "").isalnum():
                continue  # never quote-inject a strange table name into PRAGMA
            cols = con.execute(f"PRAGMA table_info({name})").fetchall()
            tables[name] = frozenset(str(c[1]) for c in cols)
        return cls(tables)

    def has(self, table: str) -> bool:
        return table in self.tables

    def first(self, candidates: tuple[str, ...]) -> str | None:
        return next((t for t in candidates if t in self.tables), None)

    def col(self, table: str, *candidates: str, default: str = "-1") -> str:
        """SQL for the first present column (NULL -> default), else the constant ``default``."""
        cols = self.tables.get(table, frozenset())
        for c in candidates:
            if c in cols:
                return f"coalesce({c}, {default})"
        return default

    def is_nsys(self) -> bool:
        return bool(MARKERS & self.tables.keys())
