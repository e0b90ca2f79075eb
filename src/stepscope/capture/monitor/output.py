"""The end of a monitored run: the verdict, ``monitor.json`` and ``monitor.parquet`` in
the run folder, and the report (text or JSON) on a stream."""

from __future__ import annotations

import json
import os
from typing import IO, Any

from stepscope.analysis.system.verdict import Verdict, verdict
from stepscope.capture.monitor import store
from stepscope.errors import TraceSourceError, one_line
from stepscope.model.system import SystemSamples
from stepscope.report.json.monitor import monitor_json

JSON_NAME = "monitor.json"  # in io.listing.COMPANION_NAMES: never listed as a trace
SAMPLES_NAME = "monitor.parquet"


def finish(samples: SystemSamples, run_dir: str, *, exit_code: int | None = None,
           fmt: str = "text", stream: IO[str] | None = None) -> tuple[Verdict, dict[str, Any]]:
    """Write both files to ``run_dir`` and print the report on ``stream`` (None: no
    report); the verdict and the JSON document."""
    try:
        os.makedirs(run_dir, exist_ok=True)
    except OSError as exc:
        raise TraceSourceError(f"cannot create {run_dir}: {one_line(str(exc))}") from None
    parquet = os.path.join(run_dir, SAMPLES_NAME)
    store.write(parquet, samples)
    found = verdict(samples)
    data = monitor_json(samples, found, exit_code=exit_code, samples_file=parquet)
    path = os.path.join(run_dir, JSON_NAME)
    try:
        with open(path, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
    except OSError as exc:
        raise TraceSourceError(f"cannot write {path}: {one_line(str(exc))}") from None
    if stream is None:
        return found, data
    if fmt == "json":
        print(json.dumps(data, indent=1), file=stream, flush=True)
        return found, data
    from rich.console import Console

    from stepscope.report.text.monitor import render_monitor

    render_monitor(data, samples, Console(file=stream))
    return found, data
