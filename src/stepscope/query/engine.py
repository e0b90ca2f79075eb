"""DuckDB over the trace's Arrow columns: open an input, register the tables a query names.

:func:`open_input` recognises the input through ``formats.kinds`` (the one registry: a
trace, a run of ranks, trtexec outputs); :func:`run_sql` builds only the tables the query
names (a kernel scan never runs the analyses behind ``findings``), registers each as an
Arrow table (DuckDB scans it in place) under a view with the documented columns, and runs
the query. The connection cannot touch files, load extensions or read Python variables
(``enable_external_access = false``, configuration locked): a query reads the trace and
nothing else, which the MCP server relies on.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from stepscope.errors import TraceFormatError, UsageError, one_line
from stepscope.model.trace import Trace
from stepscope.query.schema import BY_NAME, NSYS, RANK, TENSORRT, TRACE, TableDef, tables_for
from stepscope.query.tables import EngineTables, TraceTables

if TYPE_CHECKING:
    import duckdb

@dataclass
class Input:
    """What a query runs over: one trace, the ranks of a run, or one TensorRT engine."""

    kind: str  # TRACE, NSYS or TENSORRT: which tables exist
    parts: list[tuple[int | None, TraceTables | EngineTables]]  # (rank or None, tables)
    label: str
    ranked: bool = False
    _built: dict[str, pa.Table] = field(default_factory=dict)

    @property
    def tables(self) -> tuple[TableDef, ...]:
        return tables_for(self.kind)

    def columns(self, table: TableDef) -> list[tuple[str, str, str]]:
        """(name, type, doc) of ``table``'s columns as this input has them."""
        cols = [(c.name, c.type, c.doc) for c in table.columns]
        return [(RANK.name, RANK.type, RANK.doc), *cols] if self.ranked else cols

    def arrow(self, name: str) -> pa.Table:
        """The Arrow table under ``name``'s view (built once)."""
        if name not in self._built:
            pieces = []
            for rank, part in self.parts:
                cols = part.build(name)
                n = len(next(iter(cols.values()))) if cols else 0
                base: dict[str, Any] = {}
                if self.ranked:
                    base["rank"] = np.full(n, rank if rank is not None else -1, np.int32)
                    base["origin_ns"] = np.full(n, part.origin_ns, np.int64)
                pieces.append(pa.table({**base, **cols}))
            self._built[name] = pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
        return self._built[name]


def _kind_of(trace: Trace) -> str:
    return NSYS if trace.meta.format == "nsys" else TRACE


def open_input(target: Trace | str | Sequence[str], *, use_cache: bool = True) -> Input:
    """The input a query runs over; a one-line error for what is no input of ``sql``."""
    if isinstance(target, Trace):
        return Input(_kind_of(target), [(None, TraceTables(target))], target.meta.path)
    from stepscope.formats import kinds

    paths = [target] if isinstance(target, str) else list(target)
    if not paths:
        raise UsageError("no input given")
    kind = kinds.identify(paths)
    pipeline = kind.pipeline(kinds.SQL)
    label = paths[0] if len(paths) == 1 else f"{paths[0]} (and {len(paths) - 1} more)"
    if pipeline is None:
        raise TraceFormatError(kinds.refusal(kind, paths[0], kinds.SQL))
    if pipeline == "tensorrt":
        from stepscope.formats.tensorrt.load import load_trt_run

        return Input(TENSORRT, [(None, EngineTables(load_trt_run(paths[0])))], label)
    from stepscope.formats.load import load_trace

    if pipeline == "trace":
        trace = load_trace(paths[0], use_cache=use_cache)
        return Input(_kind_of(trace), [(None, TraceTables(trace))], label)
    from stepscope.model.run import assign_ranks
    from stepscope.report.run import find_run

    run = find_run(paths)
    traces = [load_trace(p, use_cache=use_cache) for p in run.paths]
    if not traces:
        raise TraceFormatError(f"{label}: no trace in it")
    ranks, _ = assign_ranks(list(run.paths), [t.meta.rank for t in traces])
    kind_name = NSYS if all(t.meta.format == "nsys" for t in traces) else TRACE
    parts: list[tuple[int | None, TraceTables | EngineTables]] = [
        (r, TraceTables(t)) for r, t in sorted(zip(ranks, traces, strict=True),
                                               key=lambda rt: rt[0])]
    return Input(kind_name, parts, label, ranked=True)


def _view_sql(inp: Input, table: TableDef) -> str:
    origin = "origin_ns" if inp.ranked else str(inp.parts[0][1].origin_ns)
    exprs = [f'{c.expr or c.name} AS "{c.name}"' for c in table.columns]
    if inp.ranked:
        exprs.insert(0, '"rank"')
    body = ", ".join(e.replace("origin_ns", origin) for e in exprs)
    return f'CREATE VIEW "{table.name}" AS SELECT {body} FROM "_raw_{table.name}"'


# no files, no extensions, no Python variables, no progress bar (DuckDB prints one on stdout
# for a query over 2 s, into the JSON or CSV being written there), then nothing can change
_LOCKDOWN = ("SET enable_progress_bar = false", "SET enable_external_access = false",
             "SET python_enable_replacements = false",
             "SET autoinstall_known_extensions = false", "SET autoload_known_extensions = false",
             "SET lock_configuration = true")


def named_tables(inp: Input, query: str) -> list[TableDef]:
    """The input's tables whose names occur in ``query`` as words (a superset of those it
    reads: building one more table costs time, never a wrong answer)."""
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", query)}
    return [t for t in inp.tables if t.name in words]


def connect(inp: Input, tables: Sequence[TableDef]) -> duckdb.DuckDBPyConnection:
    import duckdb

    con = duckdb.connect()
    for t in tables:
        con.register(f"_raw_{t.name}", inp.arrow(t.name))
        con.execute(_view_sql(inp, t))
    for statement in _LOCKDOWN:
        con.execute(statement)
    return con


def run_sql(inp: Input, query: str) -> pa.Table:
    """The result of ``query`` over ``inp``'s tables; a bad query is a one-line UsageError."""
    import duckdb

    if not query.strip():
        raise UsageError("empty SQL query")
    wanted = named_tables(inp, query)
    con = connect(inp, wanted)
    try:
        rel = con.sql(query)
        if rel is None:  # a statement without a result (SET, CREATE VIEW, ...)
            return pa.table({})
        # to_arrow_table: DuckDB 2 (fetch_arrow_table, its older name, is deprecated there)
        fetch = getattr(rel, "to_arrow_table", None) or rel.fetch_arrow_table
        result: pa.Table = fetch()
    except duckdb.Error as exc:
        raise UsageError(_sql_error(inp, exc)) from None
    finally:
        con.close()
    return result


def _sql_error(inp: Input, exc: Exception) -> str:
    msg = one_line(str(exc), 400)
    missing = re.search(r"Table with name (\S+) does not exist!", msg)
    if missing:  # DuckDB suggests its catalog's tables; name ours instead
        import difflib

        names = [t.name for t in inp.tables]
        close = difflib.get_close_matches(missing.group(1).lower(), names, n=1)
        hint = f'did you mean "{close[0]}"? ' if close else ""
        msg = (f"no table {missing.group(1)}: {hint}this input has {', '.join(names)} "
               "(stepscope sql PATH --schema lists their columns)")
    return f"SQL: {msg}"


def schema_rows(inp: Input) -> list[dict[str, str]]:
    """One row per (table, column) this input has."""
    return [{"table": t.name, "column": n, "type": ty, "doc": d}
            for t in inp.tables for n, ty, d in inp.columns(t)]


__all__ = ["BY_NAME", "Input", "open_input", "run_sql", "schema_rows"]
