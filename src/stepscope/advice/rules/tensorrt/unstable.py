"""TensorRT rule: unstable timings (the measurements themselves are not trustworthy)."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.tensorrt.context import TrtContext, fmt_ms

CV_PCT = 2.5  # trtexec's threshold on the GPU compute coefficient of variance


def _cv(ctx: TrtContext) -> float | None:
    if ctx.a.timing_cv_pct is not None:
        return ctx.a.timing_cv_pct
    s = ctx.a.summary.get("GPU Compute Time") if ctx.a.summary else None
    return s.cv_pct if s else None


def check(ctx: TrtContext) -> Finding | None:
    cv = _cv(ctx)
    warned = [
        w
        for w in (ctx.a.run.log.warnings if ctx.a.run.log else ())
        if "coefficient of variance" in w.lower() or "unstable" in w.lower()
    ]
    if (cv is None or cv <= CV_PCT) and not warned:
        return None
    evidence = []
    if cv is not None:
        evidence.append(
            f"GPU compute coefficient of variance {cv:.1f} % (trtexec warns above {CV_PCT} %)"
        )
    s = ctx.a.summary.get("GPU Compute Time") if ctx.a.summary else None
    if s is not None:
        evidence.append(
            f"GPU compute min {fmt_ms(s.min)}, median {fmt_ms(s.median)}, max {fmt_ms(s.max)}"
        )
    evidence += [f"trtexec: {w}" for w in warned[:3]]
    return ctx.finding(
        id="trt-unstable-timings",
        title="Unstable timings: compare runs with care",
        saving_ms=0.0,
        estimate="No saving: this is about measurement quality.",
        evidence=evidence,
        fix=(
            "Lock the GPU clocks (sudo nvidia-smi -lgc <base clock>), warm up longer and measure "
            "longer (--warmUp=2000 --duration=30), use --useSpinWait, and make sure no other "
            "process shares the GPU; compare medians, not means."
        ),
        code=(
            "sudo nvidia-smi -lgc 1410 && trtexec --loadEngine=model.engine "
            "--warmUp=2000 --duration=30 --useSpinWait"
        ),
        references=(
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/best-practices.html",
        ),
    )
