"""TensorRT rule: layers left in higher precision inside a lower-precision engine."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.advice.rules.tensorrt.context import TrtContext, fmt_ms, layer_line
from stepscope.units import count

THRESHOLD_PCT = 10.0  # of the summed per-layer time in higher-precision compute layers
SPEEDUP = 2.0  # assumed speed-up of one precision step down (FP32->FP16, FP16->INT8)
_RANK = {"INT4": 0, "FP4": 0, "FP8": 1, "INT8": 1, "FP16": 2, "BF16": 2, "TF32": 3, "FP32": 3}
_NOT_COMPUTE = {
    "Reformat",
    "Constant",
    "NoOp",
    "Shuffle",
    "TrainStation",
    "DeviceToShapeHost",
    "Slice",
    "Padding",
    "Concatenation",
}


def check(ctx: TrtContext) -> Finding | None:
    target = ctx.a.engine_precision
    if target is None or target in ("FP32", "TF32"):
        return None
    rank = _RANK.get(target, 3)
    rows = [
        r
        for r in ctx.a.layers
        if r.precision in _RANK
        and _RANK[r.precision] > rank
        and (r.average_ms or 0) > 0
        and not r.is_reformat
        and r.layer_type not in _NOT_COMPUTE
        and r.decoded.kind != "shape-sync"
    ]
    ms = sum(r.average_ms or 0.0 for r in rows)
    share = 100.0 * ms / ctx.a.layer_total_ms if ctx.a.layer_total_ms > 0 else 0.0
    if share < THRESHOLD_PCT:
        return None
    rows.sort(key=lambda r: -(r.average_ms or 0.0))
    by_prec: dict[str, float] = {}
    for r in rows:
        by_prec[r.precision or "?"] = by_prec.get(r.precision or "?", 0.0) + (r.average_ms or 0.0)
    evidence = [
        f"engine built for {target}; {count(len(rows), 'compute layer')} in higher precision: "
        + ", ".join(f"{p} {fmt_ms(v)}" for p, v in sorted(by_prec.items())),
        f"they take {share:.1f} % of the summed per-layer time",
    ] + [layer_line(r) for r in rows[:6]]
    if target == "INT8":
        built = (ctx.a.run.option("Precision") or "").upper()
        no_fp16 = bool(built) and "FP16" not in built
        fix = (
            (
                "The engine was built without FP16: add --fp16 so that layers without an INT8 "
                "kernel fall back to FP16 instead of FP32. "
                if no_fp16
                else ""
            )
            + "Give these layers INT8 inputs: with QAT add QuantizeLinear/DequantizeLinear "
            "around them (and around residual adds); with PTQ make sure the calibrator covers "
            "them. Post-processing regions (NMS, TopK) often have to stay FP16/FP32."
        )
        if no_fp16:
            evidence.insert(1, f"build precision {built}: FP16 was not enabled")
    else:
        fix = (
            f"Check why these layers stay above {target}: a --layerPrecisions / "
            "--precisionConstraints=obey setting, ONNX Cast nodes to float32, or ops TensorRT "
            f"keeps in FP32 for accuracy (normalisations). Allow {target} with "
            "--precisionConstraints=prefer and verify accuracy."
        )
    return ctx.finding(
        id="trt-precision",
        title=f"Layers left above {target} in an {target} engine",
        saving_ms=ms * (1.0 - 1.0 / SPEEDUP) * ctx.layer_scale,
        estimate=(
            "Assumes one precision step down halves these layers' time (per-layer "
            "profile, scaled to the end-to-end GPU compute time)."
        ),
        evidence=evidence,
        fix=fix,
        references=(
            "https://docs.nvidia.com/deeplearning/tensorrt/latest/inference-library/work-quantized-types.html",
        ),
    )
