"""``stepscope sql PATH "SELECT ..."``: SQL over a trace, a run of ranks or trtexec outputs.

The tables and their columns are docs/sql.md (``--schema`` lists them for the input).
"""

from __future__ import annotations

import argparse
import sys

from stepscope.errors import UsageError
from stepscope.query.output import FORMATS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="+", metavar="PATH",
        help="a trace (.json[.gz], nsys .sqlite/.nsys-rep), trtexec outputs, or a folder or "
        "several files (a run of ranks: every table gains a rank column); the query follows",
    )
    parser.add_argument("--query", "-q", default=None, metavar="SQL",
                        help="the query (instead of the last positional argument)")
    parser.add_argument("--schema", action="store_true",
                        help="list the tables and columns this input has, and exit")
    parser.add_argument("--format", choices=FORMATS, default="table",
                        help="table (aligned text), csv, json (a list of row objects) or "
                        "parquet (needs --out) (default: %(default)s)")
    parser.add_argument("--out", default=None, metavar="FILE",
                        help="write the result to FILE instead of standard output")
    parser.add_argument("--no-cache", action="store_true",
                        help="re-parse the trace instead of using the Arrow cache")


def _split(args: argparse.Namespace) -> tuple[list[str], str | None]:
    """The input paths and the query: the query is --query, else the last argument."""
    paths = list(args.path)
    if args.query is not None or args.schema:
        return paths, args.query
    if len(paths) < 2:
        raise UsageError('give a query after the path: stepscope sql PATH "SELECT ..." '
                         "(or --schema to list the tables)")
    return paths[:-1], paths[-1]


def run(args: argparse.Namespace) -> int:
    import duckdb  # noqa: F401 - without the sql extra, say so before reading the input
    import pyarrow as pa

    from stepscope.query.engine import open_input, run_sql, schema_rows
    from stepscope.query.output import encode

    paths, query = _split(args)
    if args.format == "parquet" and args.out is None:
        raise UsageError("--format parquet writes a binary file: give --out FILE.parquet")
    if args.out is not None:
        from stepscope.io.output import unwritable

        problem = unwritable(args.out)
        if problem is not None:
            raise UsageError(f"--out {args.out!r}: cannot write ({problem})")
    inp = open_input(paths, use_cache=not args.no_cache)
    if args.schema:
        result = pa.Table.from_pylist(schema_rows(inp))
    else:
        assert query is not None
        result = run_sql(inp, query)
    data = encode(result, args.format)
    if args.out is None:
        sys.stdout.write(data.decode())
        return 0
    from stepscope.cli.options import tell_written
    from stepscope.io.output import write_atomic

    try:
        write_atomic(args.out, data)
    except OSError as exc:
        raise UsageError(f"--out {args.out!r}: cannot write ({exc.strerror or exc})") from None
    tell_written(f"{result.num_rows} rows", args.out)
    return 0
