"""What the TensorRT rules need: the engine analysis and per-inference scaling.

For TensorRT runs a "step" is one inference query: savings are per query, scaled to the
summary's mean GPU compute time (else the summed per-layer time).
"""

from __future__ import annotations

from collections.abc import Sequence

from stepscope.advice.finding import Finding
from stepscope.analysis.tensorrt.engine import LayerRow, TrtAnalysis
from stepscope.shortnames import short_name


class TrtContext:
    def __init__(self, a: TrtAnalysis) -> None:
        self.a = a
        self.step_ms = a.inference_ms or 0.0
        # per-layer times (separate profiling run) -> end-to-end GPU compute scale
        self.layer_scale = (self.step_ms / a.layer_total_ms) if a.layer_total_ms > 0 else 1.0

    def pct(self, ms: float) -> float:
        return 100.0 * ms / self.step_ms if self.step_ms > 0 else 0.0

    def median(self, metric: str) -> float | None:
        s = self.a.summary.get(metric) if self.a.summary else None
        return None if s is None else s.median

    def option_on(self, key: str) -> bool | None:
        v = self.a.run.option(key)
        if v is None:
            return None
        return v.strip().lower() in ("enabled", "true", "1", "yes", "on")

    def finding(
        self,
        *,
        id: str,
        title: str,
        saving_ms: float,
        estimate: str,
        evidence: Sequence[str],
        fix: str,
        code: str | None = None,
        references: Sequence[str] = (),
    ) -> Finding:
        saving = max(0.0, min(float(saving_ms), self.step_ms)) if self.step_ms > 0 else 0.0
        return Finding(
            id=id,
            title=title,
            saving_us=saving * 1000.0,
            saving_pct=self.pct(saving),
            estimate=estimate,
            evidence=tuple(evidence),
            fix=fix,
            code=code,
            references=tuple(references),
        )


def fmt_ms(ms: float) -> str:
    return f"{ms:,.3f} ms" if ms >= 1 else f"{ms * 1000:,.1f} µs"


def layer_line(r: LayerRow) -> str:
    name = short_name(r.name, 90)
    parts = [f"{name}: {fmt_ms(r.average_ms or 0.0)}"]
    if r.share_pct is not None:
        parts.append(f"{r.share_pct:.1f} %")
    if r.precision:
        parts.append(r.precision)
    if r.layer_type:
        parts.append(r.layer_type)
    return ", ".join(parts)
