"""The ``system`` key of the JSON report: the monitored run beside the trace (docs/monitor.md)
as ``stepscope.monitor/1`` says it, plus the series the dashboard's System page draws."""

from __future__ import annotations

from typing import Any

from stepscope.analysis.system.series import SystemRun, chart_series
from stepscope.report.json.monitor import monitor_json


def system_json(run: SystemRun | None, error: str | None = None) -> dict[str, Any] | None:
    if run is None:
        return None if error is None else {"error": error}
    doc = monitor_json(run.samples, run.verdict, samples_file=run.path)
    doc.pop("schema")
    return {"file": run.path, **doc, "charts": chart_series(run.samples)}


def system_beside(location: str) -> dict[str, Any] | None:
    """The ``system`` section of the monitor output in ``location`` (a trace's folder, or the
    trace itself), or None when none sits there."""
    from stepscope.analysis.system.series import system_run
    from stepscope.errors import StepscopeError
    from stepscope.formats.monitor.read import read_samples, samples_beside

    path = samples_beside(location)
    if path is None:
        return None
    try:
        return system_json(system_run(read_samples(path), path))
    except StepscopeError as exc:
        return system_json(None, str(exc))
