"""SQL over every input: DuckDB over the trace's Arrow columns (``stepscope sql``, docs/sql.md).

A layer between ``report`` (whose run listing and advisors it uses) and ``server``/``cli``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

    from stepscope.model.trace import Trace


def sql(target: Trace | str | Sequence[str], query: str, *, use_cache: bool = True) -> pa.Table:
    """Run ``query`` over a trace (or a path: a trace, a folder or list of rank traces,
    trtexec outputs) and return the result as an Arrow table."""
    from stepscope.query.engine import open_input, run_sql

    return run_sql(open_input(target, use_cache=use_cache), query)
