"""TensorRT rule: tiny batches leave the GPU underused (per-layer fixed costs dominate)."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.tensorrt.context import TrtContext, fmt_ms

MAX_BATCH = 2
SHORT_LAYER_MS = 0.010  # layers under 10 µs are dominated by launch/ramp-up cost
SHORT_SHARE = 0.5  # of the profiled layers are that short


def check(ctx: TrtContext) -> Finding | None:
    batch = ctx.a.batch
    timed = [r for r in ctx.a.layers if (r.average_ms or 0.0) > 0]
    if batch is None or batch > MAX_BATCH or not timed:
        return None
    short = [r for r in timed if (r.average_ms or 0.0) < SHORT_LAYER_MS]
    if len(short) < SHORT_SHARE * len(timed):
        return None
    short_ms = sum(r.average_ms or 0.0 for r in short)
    qps = ctx.a.summary.throughput_qps if ctx.a.summary else None
    evidence = [
        f"batch size {batch}",
        f"{len(short)} of {len(timed)} timed layers run under {fmt_ms(SHORT_LAYER_MS)} "
        f"({fmt_ms(short_ms)} per inference together)",
    ]
    if qps:
        evidence.append(f"throughput {qps:,.1f} queries/s = {qps * batch:,.1f} samples/s")
    return ctx.finding(
        id="trt-small-batch",
        title="Tiny batches: most layers are too short to fill the GPU",
        saving_ms=0.5 * short_ms * ctx.layer_scale,
        estimate=(
            "Assumes half of the time of layers shorter than 10 µs is fixed per-launch cost "
            "that a larger batch amortises (per sample); a rough upper bound."
        ),
        evidence=evidence,
        fix=(
            "If throughput matters, batch requests (dynamic batching in Triton, or an optimisation "
            "profile with a larger batch: --minShapes/--optShapes/--maxShapes) and compare "
            "samples/s; for latency-bound serving, use CUDA graphs and several streams instead."
        ),
        code=(
            "trtexec --onnx=model.onnx --minShapes=input:1x3x224x224 "
            "--optShapes=input:8x3x224x224 --maxShapes=input:32x3x224x224"
        ),
        references=(
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/best-practices.html#batching",
        ),
    )
