"""Read a monitor output: the samples (Parquet, the run's facts in its schema metadata), and
find the one that sits beside a trace (``stepscope run --monitor`` writes it into the trace's
run folder)."""

from __future__ import annotations

import json
import os

from stepscope.errors import TraceSourceError, one_line
from stepscope.io.source import is_url, local_path
from stepscope.model.system import SystemSamples

JSON_NAME = "monitor.json"
SAMPLES_NAME = "monitor.parquet"
META_KEY = b"stepscope.monitor"


def read_samples(path: str) -> SystemSamples:
    """The samples of ``monitor.parquet`` at ``path``; a one-line error when unreadable."""
    # imported here: every report looks for samples beside its trace (samples_beside), and
    # pyarrow.parquet costs ~0.15 s to import where there are none
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise TraceSourceError(f"cannot read monitor samples {path}: "
                               f"{one_line(str(exc))}") from None
    try:
        meta = json.loads((table.schema.metadata or {}).get(META_KEY, b"{}"))
        return SystemSamples(
            columns=table.to_pydict(), hz=float(meta.get("hz", 10.0)),
            n_cores=int(meta.get("n_cores", 1)), gpu_names=list(meta.get("gpu_names", [])),
            phases=bool(meta.get("phases", False)), command=str(meta.get("command", "")),
            sampler_cpu_s=float(meta.get("sampler_cpu_s", 0.0)),
            duration_s=float(meta.get("duration_s", 0.0)))
    except (ValueError, TypeError, AttributeError) as exc:
        raise TraceSourceError(f"{path}: not a stepscope monitor samples file "
                               f"({one_line(str(exc))})") from None


def samples_beside(trace_path: str) -> str | None:
    """``monitor.parquet`` in the local folder of ``trace_path`` (a file, or a folder of
    traces), when ``monitor.json`` marks it as a monitor output; else None."""
    if not trace_path or is_url(trace_path):
        return None
    local = local_path(trace_path)
    folder = local if os.path.isdir(local) else os.path.dirname(local) or "."
    parquet = os.path.join(folder, SAMPLES_NAME)
    if os.path.isfile(os.path.join(folder, JSON_NAME)) and os.path.isfile(parquet):
        return parquet
    return None
