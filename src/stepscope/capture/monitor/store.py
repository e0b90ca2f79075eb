"""The samples on disk: one Parquet file, the run's facts in its schema metadata."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from stepscope.errors import TraceSourceError, one_line
from stepscope.formats.monitor.read import META_KEY  # one key, written here and read there
from stepscope.model.system import SystemSamples

if TYPE_CHECKING:
    from stepscope.capture.monitor.sampler import Sampler


def samples_of(sampler: Sampler, *, command: str = "", duration_s: float = 0.0) -> SystemSamples:
    return SystemSamples(
        columns=sampler.columns, hz=sampler.hz, n_cores=sampler.n_cores,
        gpu_names=list(sampler.gpus.names),
        phases=any(sampler.columns.get("phase_hooked") or ()),
        command=command, sampler_cpu_s=sampler.ticks_cpu_s, duration_s=duration_s)


def write_samples(path: str, sampler: Sampler, **facts: Any) -> None:
    write(path, samples_of(sampler, **facts))


def write(path: str, samples: SystemSamples) -> None:
    table = pa.Table.from_pydict(dict(samples.columns)) if samples.columns else pa.table({})
    meta = {"hz": samples.hz, "n_cores": samples.n_cores, "gpu_names": samples.gpu_names,
            "phases": samples.phases, "command": samples.command,
            "sampler_cpu_s": samples.sampler_cpu_s, "duration_s": samples.duration_s}
    table = table.replace_schema_metadata({META_KEY: json.dumps(meta).encode()})
    try:
        pq.write_table(table, path)
    except OSError as exc:
        raise TraceSourceError(f"cannot write {path}: {one_line(str(exc))}") from None


def read(path: str) -> SystemSamples:
    from stepscope.formats.monitor.read import read_samples  # the one reader

    return read_samples(path)
