"""TensorRT rule: host<->device copies as large as the GPU compute itself."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.tensorrt.context import TrtContext, fmt_ms

SHARE = 0.5  # transfers >= half the GPU compute (trtexec warns at >= 1x for either direction)


def check(ctx: TrtContext) -> Finding | None:
    h2d = ctx.median("H2D Latency") or 0.0
    d2h = ctx.median("D2H Latency") or 0.0
    gpu = ctx.median("GPU Compute Time")
    if gpu is None or gpu <= 0 or (h2d + d2h) < SHARE * gpu:
        return None
    evidence = [
        f"median H2D {fmt_ms(h2d)}, D2H {fmt_ms(d2h)}, GPU compute {fmt_ms(gpu)} per query",
        f"copies are {(h2d + d2h) / gpu:.2f}x the GPU compute time",
    ]
    lat = ctx.median("Latency")
    if lat:
        evidence.append(f"median latency {fmt_ms(lat)} = H2D + compute + D2H")
    return ctx.finding(
        id="trt-transfer-bound",
        title="Transfer-bound: host<->device copies rival the GPU compute",
        saving_ms=min(h2d + d2h, gpu),
        estimate=(
            "Copies overlapped with the compute of the previous/next query hide at most "
            "min(H2D + D2H, GPU compute) per query."
        ),
        evidence=evidence,
        fix=(
            "Measure the engine alone with --noDataTransfers (TensorRT 11: the default). In the "
            "application: use pinned host buffers (cudaHostAlloc / torch pin_memory), issue "
            "copies with cudaMemcpyAsync on a separate stream and double-buffer so copies overlap "
            "compute, keep pre/post-processing on the GPU, and send smaller dtypes (FP16/INT8 I/O "
            "via --inputIOFormats)."
        ),
        code="trtexec --loadEngine=model.engine --noDataTransfers   # engine-only figures",
        references=(
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/best-practices.html",
        ),
    )
