"""The report of a TensorRT (trtexec) run: analysis + findings, and its JSON.

Same contract as the trace report (``schema``, ``source``, ``devices``, ``findings``) with the
engine results under the ``tensorrt`` key; the trace-only keys are absent (docs/report-json.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from stepscope.advice.finding import Finding
from stepscope.analysis.tensorrt.engine import TrtAnalysis, analyse_tensorrt, summary_json
from stepscope.model.tensorrt import TrtRun
from stepscope.report.build import SCHEMA


@dataclass(frozen=True)
class TrtReport:
    analysis: TrtAnalysis
    top: int
    findings: list[Finding] = field(default_factory=list)
    kernels_source: str | None = None  # nsys export used for per-layer GPU time
    kernel_mapping: dict[str, Any] | None = None  # mapped/unmapped kernel counts

    def to_json(self) -> dict[str, Any]:
        a = self.analysis
        run = a.run
        salvaged = any(x is not None and x.salvaged for x in (run.profile, run.graph))
        return {
            "schema": SCHEMA,
            "source": {
                "path": run.path,
                "format": "trtexec",
                "events": len(a.layers),
                "vendor": "nvidia",
                "rank": None,
                "world_size": None,
                "skipped": {},
                "warnings": list(run.warnings) + list(a.notes),
                "partial": salvaged or bool(run.warnings),
            },
            "devices": [device_json(run.device)] if run.device else [],
            "findings": [f.to_json() for f in self.findings],
            "tensorrt": tensorrt_json(a, self.kernels_source)
            | {"kernel_mapping": self.kernel_mapping},
        }


def _memory_bytes(text: str | None) -> int | None:
    """``"24217 MiB"`` / ``"84929216512"`` -> bytes."""
    if not text:
        return None
    m = re.match(r"^\s*([\d.]+)\s*(B|KiB|MiB|GiB|TiB)?\b", text)
    if not m:
        return None
    scale = {None: 1, "B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
    return int(float(m.group(1)) * scale[m.group(2)])


def device_json(device: tuple[tuple[str, str], ...]) -> dict[str, Any]:
    """The trace report's device keys, plus every key trtexec printed under ``details``."""
    d = dict(device)
    sms = d.get("SMs", "")
    cc = d.get("Compute Capability")
    return {
        "id": 0,
        "name": d.get("Selected Device"),
        "total_memory_bytes": _memory_bytes(d.get("Device Global Memory")),
        "compute_capability": cc.replace(", ", ".") if cc else None,
        "num_sms": int(float(sms)) if re.fullmatch(r"\d+(\.0+)?", sms.strip()) else None,
        "details": d,
    }


def tensorrt_json(a: TrtAnalysis, kernels_source: str | None = None) -> dict[str, Any]:
    run = a.run
    log = run.log
    return {
        "engine": run.name,
        "files": list(run.files),
        "log": log.path if log else None,
        "trt_version": log.version if log else None,
        "command": log.command if log else None,
        "passed": log.passed if log else None,
        "options": dict(run.options)
        | ({k: v for _b, items in log.options for k, v in items} if log else {}),
        "engine_precision": a.engine_precision,
        "batch": a.batch,
        "profiled_iterations": a.profiled_iterations,
        "layer_total_ms": round(a.layer_total_ms, 6),
        "inference_ms": None if a.inference_ms is None else round(a.inference_ms, 6),
        "summary": summary_json(a.summary),
        "timing_cv_pct": None if a.timing_cv_pct is None else round(a.timing_cv_pct, 3),
        "iterations_timed": len(run.times) if run.times is not None else None,
        "trtexec_warnings": list(log.warnings) if log else [],
        "layers": [r.to_json() for r in a.layers],
        "reformats": a.reformats.to_json(),
        "precision_mix": [s.to_json() for s in a.precision_mix],
        "by_type": [s.to_json() for s in a.by_type],
        "graph": None if a.graph is None else a.graph.to_json(),
        "iterations": None if a.iterations is None else a.iterations.to_json(),
        "kernels_source": kernels_source,
        "notes": list(a.notes),
    }


def build_trt_report(run: TrtRun, *, top: int = 20, nsys: str | None = None) -> TrtReport:
    from stepscope.advice.tensorrt import advise_tensorrt

    analysis = analyse_tensorrt(run)
    stats: dict[str, Any] | None = None
    if nsys is not None:
        from stepscope.analysis.tensorrt.engine import with_gpu_times
        from stepscope.analysis.tensorrt.kernels import layer_gpu_times
        from stepscope.formats.tensorrt.nsys import read_layer_kernels

        mapping = layer_gpu_times(read_layer_kernels(nsys))
        analysis = with_gpu_times(analysis, mapping.per_layer_ms, mapping.kernels)
        stats = {
            "mapped_kernels": mapping.mapped_kernels,
            "unmapped_kernels": mapping.unmapped_kernels,
            "unmapped_ms": round(mapping.unmapped_ms, 6),
            "layers_with_kernels": len(mapping.per_layer_ms),
        }
    return TrtReport(
        analysis=analysis,
        top=top,
        findings=advise_tensorrt(analysis),
        kernels_source=nsys,
        kernel_mapping=stats,
    )
