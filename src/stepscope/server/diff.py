"""``api/diff``: compare two loaded traces of the logdir (the ``stepscope diff`` JSON).

Both reports come from the trace store (the dashboard's top-N rows) with the per-step
kernel and operator series computed at load, so the comparison costs no extra load and
tests what ``stepscope diff`` on two trace files tests; a side whose tables are shorter
than N holds every row (complete).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stepscope.analysis.compare.diff import diff_runs
from stepscope.analysis.compare.step_series import StepSeries
from stepscope.errors import StepscopeError
from stepscope.report.diff_load import summary_from_report
from stepscope.report.json.diff import diff_to_json
from stepscope.server.store import DASHBOARD_TOP

TABLES = ("operators", "operators_by_shape", "kernels")


class DiffInputError(ValueError):
    """The two reports cannot be compared (not training traces, or incompatible)."""


def diff_reports(base: dict[str, Any], base_label: str,
                 new: dict[str, Any], new_label: str, *,
                 series: tuple[StepSeries | None, StepSeries | None] = (None, None)
                 ) -> dict[str, Any]:
    """``stepscope.diff/1`` JSON of two report documents (with their per-step series)."""
    for doc, label in ((base, base_label), (new, new_label)):
        if "breakdown" not in doc:
            raise DiffInputError(f"{label}: not a training trace (no step breakdown to compare)")
    try:
        b, n = (replace(summary_from_report(doc, label, series=ser, complete=_complete(doc)),
                        kind="trace")
                for doc, label, ser in ((base, base_label, series[0]),
                                        (new, new_label, series[1])))
        return diff_to_json(diff_runs(b, n))
    except (StepscopeError, ValueError) as exc:
        raise DiffInputError(f"{base_label} vs {new_label}: cannot compare ({exc})") from None


def _complete(doc: dict[str, Any]) -> bool:
    return all(len(doc.get(k) or ()) < DASHBOARD_TOP for k in TABLES)
