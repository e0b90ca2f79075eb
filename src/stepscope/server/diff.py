"""``api/diff``: compare two loaded traces of the logdir (the ``stepscope diff`` JSON).

Both reports come from the trace store (the dashboard's top-N rows), so the comparison
costs no extra load; a side whose tables are shorter than N holds every row (complete, as
``stepscope diff`` on two trace files). Without per-step kernel series, kernel changes
carry no significance test.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stepscope.analysis.diff import diff_runs
from stepscope.errors import StepscopeError
from stepscope.report.diff_json import diff_to_json
from stepscope.report.diff_load import summary_from_report
from stepscope.server.store import DASHBOARD_TOP

TABLES = ("operators", "operators_by_shape", "kernels")


class DiffInputError(ValueError):
    """The two reports cannot be compared (not training traces, or incompatible)."""


def diff_reports(base: dict[str, Any], base_label: str,
                 new: dict[str, Any], new_label: str) -> dict[str, Any]:
    """``stepscope.diff/1`` JSON of two report documents."""
    for doc, label in ((base, base_label), (new, new_label)):
        if "breakdown" not in doc:
            raise DiffInputError(f"{label}: not a training trace (no step breakdown to compare)")
    try:
        b, n = (replace(summary_from_report(doc, label, complete=_complete(doc)), kind="trace")
                for doc, label in ((base, base_label), (new, new_label)))
        return diff_to_json(diff_runs(b, n))
    except (StepscopeError, ValueError) as exc:
        raise DiffInputError(f"{base_label} vs {new_label}: cannot compare ({exc})") from None


def _complete(doc: dict[str, Any]) -> bool:
    return all(len(doc.get(k) or ()) < DASHBOARD_TOP for k in TABLES)
