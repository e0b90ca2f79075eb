"""TensorRT rule: reformat (format/precision conversion) layers cost a visible share."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.tensorrt.context import TrtContext, fmt_ms, layer_line
from stepscope.units import count

THRESHOLD_PCT = 5.0  # of the summed per-layer time


def check(ctx: TrtContext) -> Finding | None:
    rf = ctx.a.reformats
    if rf.layers == 0 or rf.share_pct < THRESHOLD_PCT:
        return None
    top = sorted((r for r in ctx.a.layers if r.is_reformat), key=lambda r: -(r.average_ms or 0.0))
    evidence = [
        f"{count(rf.layers, 'reformat layer')}: {fmt_ms(rf.average_ms)} per inference, "
        f"{rf.share_pct:.1f} % of the summed per-layer time",
        f"{rf.converting} of them convert the data type ({fmt_ms(rf.converting_ms)}), "
        "the rest only change the memory layout",
    ] + [layer_line(r) for r in top[:5]]
    return ctx.finding(
        id="trt-reformat",
        title="Reformat layers convert tensors between formats or precisions",
        saving_ms=rf.average_ms * ctx.layer_scale,
        estimate=(
            "Per-inference time of all reformat layers (per-layer profile), scaled to the "
            "end-to-end GPU compute time; removing them is the upper bound."
        ),
        evidence=evidence,
        fix=(
            "Keep neighbouring layers in one precision and layout: in QAT models put Q/DQ pairs "
            "so that every convolution/GEMM fuses with them; let the network I/O use the "
            "engine's native format (--inputIOFormats=int8:chw32 / fp16:chw, "
            "--outputIOFormats=...); avoid forcing per-layer precisions (--layerPrecisions) that "
            "split precision islands."
        ),
        code=(
            "trtexec --onnx=model.onnx --int8 --fp16 --inputIOFormats=fp16:chw "
            "--outputIOFormats=fp16:chw --exportProfile=profile.json --exportLayerInfo=graph.json "
            "--profilingVerbosity=detailed"
        ),
        references=(
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/performance/best-practices.html",
        ),
    )
