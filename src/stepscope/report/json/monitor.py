"""``stepscope.monitor/1``: the JSON of a monitored run (verdict, shares, summaries)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from stepscope.analysis.system.summary import metric_summaries
from stepscope.analysis.system.verdict import Verdict
from stepscope.model.system import SystemSamples
from stepscope.report.json.rounding import r

SCHEMA = "stepscope.monitor/1"


def monitor_json(samples: SystemSamples, verdict: Verdict, *, exit_code: int | None = None,
                 samples_file: str | None = None) -> dict[str, Any]:
    s = verdict.shares
    return {
        "schema": SCHEMA,
        "command": samples.command,
        "exit_code": exit_code,
        "duration_s": r(samples.duration_s, 3),
        "hz": samples.hz,
        "samples": samples.n,
        "samples_file": samples_file,
        "cores": samples.n_cores,
        "gpus": list(samples.gpu_names),
        "phases_timed": samples.phases,
        "verdict": {
            "bound": verdict.bound,
            "confidence": verdict.confidence,
            "reason": verdict.reason,
            "next_step": verdict.next_step,
            "evidence": {k: r(v, 4) for k, v in verdict.evidence.items()},
        },
        "window": {"start_s": _at(samples, s.window.start - 1),
                   "end_s": _at(samples, s.window.end - 1),
                   "seconds": r(s.window.seconds, 3), "from_steps": s.window.from_steps},
        "phases": {k: r(v, 4) for k, v in s.phases.items()},
        "throughput": {"steps": s.steps, "batches": s.batches,
                       "steps_per_s": r(s.steps_per_s, 3),
                       "samples_per_s": r(s.samples_per_s, 3)},
        "metrics": {name: {k: r(v, 3) if isinstance(v, float) else v
                           for k, v in asdict(m).items()}
                    for name, m in metric_summaries(samples).items()},
        "sampler": {"cpu_s": r(samples.sampler_cpu_s, 3),
                    "cpu_share": r(samples.sampler_cpu_s / samples.duration_s, 4)
                    if samples.duration_s > 0 else None},
    }


def _at(samples: SystemSamples, index: int) -> float | None:
    t = samples.series("t")
    if not t:
        return None
    return r(0.0 if index < 0 else float(t[min(index, len(t) - 1)]), 3)
