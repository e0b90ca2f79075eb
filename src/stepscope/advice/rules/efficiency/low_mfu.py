"""Rule: model FLOPs utilisation is low -> its main reasons, each with its share."""

from __future__ import annotations

from stepscope.advice.context import Context, Premises, fmt_ns, short
from stepscope.advice.finding import Finding
from stepscope.analysis.efficiency.roofline import Efficiency

MFU_LOW_PCT = 40.0  # well-tuned large-model training reaches 40-60 % MFU
MATRIX_TARGET = 0.7  # share of the roofline well-shaped matmuls/convolutions reach
MATRIX = ("matmul", "conv", "attention")
FP32_MIN_SHARE = 0.01  # of device time, to be worth a line

CODE = """\
torch.set_float32_matmul_precision("high")        # TF32 for remaining float32 matmuls
model = torch.compile(model)                        # fuse memory-bound pointwise/norm ops
with torch.autocast("cuda", dtype=torch.bfloat16):  # matmuls on bf16 Tensor Cores
    out = model(x)"""
# NVIDIA before Ampere (Volta, Turing): no TF32 and no bf16 Tensor Cores, so fp16 with loss
# scaling is the precision that reaches them
CODE_FP16 = """\
scaler = torch.amp.GradScaler("cuda")              # fp16 gradients need loss scaling
model = torch.compile(model)                       # fuse memory-bound pointwise/norm ops
with torch.autocast("cuda", dtype=torch.float16):  # matmuls on fp16 Tensor Cores
    loss = model(x)
scaler.scale(loss).backward()"""
# inference on Volta/Turing: fp16 without loss scaling (no gradients)
CODE_FP16_INFER = """\
model = torch.compile(model)                       # fuse memory-bound pointwise/norm ops
with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
    out = model(x)"""
# already bf16/fp16: no precision change to suggest
CODE_COMPILE = """\
model = torch.compile(model)   # fuse the memory-bound pointwise/norm ops between the GEMMs"""
# already compiled: let Inductor autotune its GEMM and fusion choices
CODE_AUTOTUNE = """\
model = torch.compile(model, mode="max-autotune")   # Triton/cuBLAS GEMM autotuning"""
# AMD (ROCm builds use the "cuda" device type)
CODE_ROCM = """\
model = torch.compile(model)                        # fuse memory-bound pointwise/norm ops
with torch.autocast("cuda", dtype=torch.bfloat16):  # matmuls on bf16 MFMA
    out = model(x)"""
CODE_ROCM_TUNE = """\
import os
os.environ["PYTORCH_TUNABLEOP_ENABLED"] = "1"   # fastest hipBLASLt/rocBLAS solution per shape"""
# AMD, already bf16/fp16, not compiled
CODE_ROCM_TUNE_COMPILE = CODE_ROCM_TUNE + """
model = torch.compile(model)                    # fuse memory-bound pointwise/norm ops"""


def _vllm_fix(p: Premises) -> tuple[str, str | None]:
    """vLLM compiles the model and sizes the batches itself: its own switches, not
    torch.compile or autocast around a model the user does not call."""
    steps = []
    if not p.low_precision:
        steps.append("serve in bf16/fp16 (vLLM's --dtype)")
    if p.compiled is None:
        steps.append("let vLLM compile the model (it does unless started with "
                     "--enforce-eager or -O.mode=0)")
    if p.amd:
        steps.append("tune the GEMMs with PyTorch TunableOp (PYTORCH_TUNABLEOP_ENABLED=1 in "
                     "vLLM's environment)")
    steps.append("batch more tokens per step (more concurrent requests, --max-num-seqs, "
                 "--max-num-batched-tokens) so that the GEMMs fill the GPU")
    return ("Raise the share of time in large, well-shaped matrix work (the run serves with "
            f"vLLM, {p.vllm}): " + "; ".join(steps) + "."), None


def _fix(p: Premises) -> tuple[str, str | None]:
    """(fix, code) for what the run already does: precision, compilation, vendor."""
    if p.vllm is not None:
        return _vllm_fix(p)
    steps = []
    if not p.low_precision:
        if p.pre_ampere:  # fp16 only; a GradScaler only where there are gradients
            steps.append("run matmuls in FP16 with torch.autocast"
                         + ("" if p.inference else " and a GradScaler")
                         + " (this GPU has no TF32 or bf16 Tensor Cores)")
        else:
            steps.append("run matmuls in BF16/FP16 with torch.autocast"
                         + (" (or TF32 for the float32 ones)" if p.tf32_capable else ""))
    if p.compiled is None:
        steps.append("fuse memory-bound chains with torch.compile")
    elif not p.amd:
        steps.append("let torch.compile autotune its GEMMs (mode=\"max-autotune\")")
    if p.amd:
        steps.append("tune the GEMMs with PyTorch TunableOp (hipBLASLt/rocBLAS solutions)")
    steps.append("grow the batch or sequence until the GEMMs are large enough to fill the GPU")
    fix = ("Raise the share of time in large, well-shaped matrix work: " + "; ".join(steps)
           + ".")
    code: str | None
    if p.amd:
        if p.compiled is not None:
            code = CODE_ROCM_TUNE
        else:
            code = CODE_ROCM_TUNE_COMPILE if p.low_precision else CODE_ROCM
    elif not p.low_precision:
        fp16 = CODE_FP16_INFER if p.inference else CODE_FP16
        code = (fp16 if p.pre_ampere else CODE) if p.compiled is None else None
    else:
        code = CODE_COMPILE if p.compiled is None else CODE_AUTOTUNE
    return fix, code


def _matrix_saving_ns(e: Efficiency) -> float:
    """Time matrix work would save at MATRIX_TARGET of its roofline (whole trace, ns)."""
    saving = 0.0
    for r in e.operators:
        if r.family in MATRIX and r.has_peak:
            floor = max(r.compute_ns, r.memory_ns) / MATRIX_TARGET
            saving += max(0.0, r.time_ns - floor)
    return saving


def check(ctx: Context) -> Finding | None:
    e = ctx.a.efficiency
    if e is None or not e.on_gpu or not ctx.has_gpu:
        return None
    mfu, hfu = e.mfu(ctx.main_device)
    matrix_ns = sum(e.time_by_family.get(f, 0.0) for f in MATRIX)
    if mfu is None or hfu is None or mfu >= MFU_LOW_PCT or matrix_ns <= 0 or e.time_ns <= 0:
        return None
    dev = next(d for d in e.devices if d.device == ctx.main_device)
    peak = dev.peak_flops(e.mfu_dtype, True)
    evidence = [
        f"MFU {mfu:.1f} % (HFU {hfu:.1f} %) of the {e.mfu_dtype} peak "
        f"{(peak or 0) / 1e12:,.0f} TFLOP/s ({dev.match}, {dev.source})",
        f"matrix work (matmul, convolution, attention) is {100 * matrix_ns / e.time_ns:.0f} % "
        f"of device time; the other {100 - 100 * matrix_ns / e.time_ns:.0f} % is memory-bound or "
        "unmodelled work",
    ]
    p = ctx.premises
    memory = [r for r in e.operators if r.bound == "memory" and r.family not in MATRIX]
    mem_ns = sum(r.time_ns for r in memory)
    if mem_ns > 0:
        top = ", ".join(f"{short(r.name, 40)} ({r.pct_peak_bw or 0:.0f} % of bandwidth)"
                        for r in memory[:3])
        who = ("torch.compile could fuse" if p.compiled is None
               else f"left unfused although the run is compiled ({short(p.compiled, 40)})")
        evidence.append(f"memory-bound operators {who}: "
                        f"{fmt_ns(mem_ns / ctx.n_steps)} per step ({top})")
    if e.fp32_matmul_ns > FP32_MIN_SHARE * e.time_ns:
        evidence.append(f"float32 matmuls/convolutions off {p.unit}: "
                        f"{fmt_ns(e.fp32_matmul_ns / ctx.n_steps)} per step ("
                        + ("TF32/BF16" if p.tf32_capable else "FP16" if p.pre_ampere
                           else "BF16/FP16") + " would do)")
    for r in [r for r in e.operators if r.family in MATRIX and r.has_peak][:3]:
        evidence.append(f"{short(r.name, 50)} ({r.dtype}): {r.pct_peak_flops or 0:.0f} % of "
                        f"peak compute, {r.pct_roofline or 0:.0f} % of its roofline")
    saving = _matrix_saving_ns(e) / ctx.n_steps
    fix, code = _fix(p)
    return ctx.finding(
        id="low-mfu", title=f"Low model FLOPs utilisation: {mfu:.1f} % of peak",
        saving_ns=saving,
        estimate=(f"Matrix work (matmul/convolution/attention) brought to "
                  f"{100 * MATRIX_TARGET:.0f} % of its roofline; the other reasons are "
                  "sized in the evidence and by their own findings."),
        evidence=evidence,
        fix=fix,
        code=code,
        references=("https://arxiv.org/abs/2204.02311",
                    "https://pytorch.org/docs/stable/generated/torch.compile.html"),
    )
