"""TensorRT rule: enqueue-bound inference (the host cannot launch work fast enough)."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.tensorrt.context import TrtContext, fmt_ms

RATIO = 0.8  # trtexec's own threshold: median enqueue > 0.8 x median GPU compute


def check(ctx: TrtContext) -> Finding | None:
    enq = ctx.median("Enqueue Time")
    gpu = ctx.median("GPU Compute Time")
    if enq is None or gpu is None or gpu <= 0 or enq <= RATIO * gpu:
        return None
    graphs = ctx.option_on("CUDA Graph")
    evidence = [
        f"median enqueue time {fmt_ms(enq)} vs median GPU compute {fmt_ms(gpu)} "
        f"({enq / gpu:.2f}x; trtexec warns above {RATIO}x)",
        f"CUDA graphs: {'enabled' if graphs else 'disabled' if graphs is False else 'unknown'}",
    ]
    if graphs:
        fix = (
            "CUDA graphs are already on: give each launch more work (larger batch), run several "
            "inferences concurrently (--infStreams=2 or more execution contexts), or reduce the "
            "number of layers (fusion-friendly ops)."
        )
    else:
        fix = (
            "Capture the enqueue in a CUDA graph (trtexec --useCudaGraph; TensorRT 11 does it by "
            "default unless --noCudaGraph; in an application: cudaStreamBeginCapture around "
            "context.enqueueV3, then cudaGraphLaunch per inference)."
        )
    return ctx.finding(
        id="trt-enqueue-bound",
        title="Enqueue-bound: the host launches work slower than the GPU runs it",
        saving_ms=max(enq - gpu, 0.0),
        estimate=(
            "Median enqueue time above median GPU compute time is GPU idle per query; "
            "removing the launch overhead (CUDA graph) recovers at most that."
        ),
        evidence=evidence,
        fix=fix,
        code="trtexec --loadEngine=model.engine --useCudaGraph --useSpinWait",
        references=(
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/best-practices.html#cuda-graphs",
        ),
    )
