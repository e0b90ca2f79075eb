"""Rule 3: matmul/convolution kernels run off Tensor Cores / matrix cores -> the fix that fits.

Premises (``Context.premises``): the GPU has matrix units; the kernels judged are GEMM and
convolution kernels launched by Tensor-Core-eligible operators (never the transposes, casts
or reductions those operators also launch). The fix follows the vendor and the dtype the
off-matrix-core work runs in: float32 -> TF32 / bf16 autocast (NVIDIA Ampere+), fp16 AMP
(Volta/Turing), bf16 autocast (AMD); already 16-bit -> shapes and library tuning, not AMP.
"""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, Premises, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.analysis.efficiency.work import DTYPE_BYTES, decode
from stepscope.analysis.events.links import gather
from stepscope.classify import names
from stepscope.units import count

MIN_SHARE_PCT = 10.0  # eligible work off Tensor Cores, % of GPU kernel time
MAX_TC_PCT = 50.0  # of eligible kernel time already on Tensor Cores
SPEEDUP = 2.0  # assumed speed-up of that work on Tensor Cores (hence saving = half)

CODE_AMP_FP16 = """\
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()"""

CODE_AMP_BF16 = """\
torch.backends.cuda.matmul.allow_tf32 = True   # or torch.set_float32_matmul_precision("high")
torch.backends.cudnn.allow_tf32 = True
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()"""

CODE_ROCM_BF16 = """\
# ROCm builds of PyTorch use the "cuda" device type; bf16 runs on MFMA (MI200/MI300)
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()"""

# inference (Premises.inference): no gradients, so no loss scaling and no backward pass
CODE_INFER_FP16 = """\
with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
    out = model(x)"""

CODE_INFER_BF16 = """\
torch.backends.cuda.matmul.allow_tf32 = True   # or torch.set_float32_matmul_precision("high")
torch.backends.cudnn.allow_tf32 = True
with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
    out = model(x)"""

CODE_INFER_ROCM_BF16 = """\
# ROCm builds of PyTorch use the "cuda" device type; bf16 runs on MFMA (MI200/MI300)
with torch.inference_mode(), torch.autocast("cuda", dtype=torch.bfloat16):
    out = model(x)"""

CODE_ROCM_TUNE = """\
# let PyTorch try every hipBLASLt/rocBLAS solution per GEMM shape and keep the fastest
import os
os.environ["PYTORCH_TUNABLEOP_ENABLED"] = "1"    # before the first matmul
os.environ["MIOPEN_FIND_MODE"] = "NORMAL"        # full MIOpen search for convolutions
torch.backends.cudnn.benchmark = True            # MIOpen find on ROCm"""

CODE_SHAPES = """\
# 16-bit GEMMs fall back to CUDA-core kernels (gemv, odd shapes): pad the dimensions
hidden = (hidden + 63) // 64 * 64
x = torch.nn.functional.pad(x, (0, (-x.shape[-1]) % 8))   # K to a multiple of 8"""


def _off_dtype(ctx: Context, owners: np.ndarray, weight: np.ndarray) -> str:
    """Dtype key of the operators that launched the off-matrix-core kernels (by time)."""
    host, trace = ctx.trace.host, ctx.trace
    acc: dict[str, float] = {}
    types = host.input_types[owners]
    for tid, w in zip(types.tolist(), weight.tolist(), strict=True):
        if tid < 0:
            continue
        rec = decode("", "", trace.strings[int(tid)], "")
        key = next((DTYPE_BYTES[t][0] for t in rec.types if t in DTYPE_BYTES), "")
        acc[key] = acc.get(key, 0.0) + float(w)
    return max(acc, key=lambda k: acc[k]) if acc else ""


def _fix(p: Premises, dtype: str) -> tuple[str, str, str]:
    """(title, fix, code) for the vendor and the dtype the off-matrix-core work runs in, and
    for inference (Premises.inference) a snippet without a backward pass or loss scaling."""
    infer = p.inference
    if dtype in ("bf16", "fp16", "fp8"):
        if p.amd:
            return ("16-bit matmuls/convolutions run off matrix cores: tune the GEMM and "
                    "convolution solutions",
                    "These operators already run in 16-bit, so autocast does not help: the "
                    "libraries picked non-MFMA kernels (matrix-vector shapes, odd sizes, or a "
                    "fast-find convolution choice). Enable PyTorch TunableOp for hipBLASLt/"
                    "rocBLAS GEMMs, run MIOpen's full find (MIOPEN_FIND_MODE=NORMAL, "
                    "cudnn.benchmark), and pad dimensions to multiples of 16.",
                    CODE_ROCM_TUNE)
        return ("16-bit matmuls/convolutions run off Tensor Cores: fix their shapes",
                "These operators already run in 16-bit, so AMP does not help: cuBLAS/cuDNN "
                "chose CUDA-core kernels, typically for matrix-vector shapes (M or N = 1), "
                "dimensions not a multiple of 8, or depthwise/grouped convolutions. Pad the "
                "dimensions to multiples of 8 (64 best), batch the matrix-vector products, "
                "and set torch.backends.cudnn.benchmark = True for convolutions.",
                CODE_SHAPES)
    if p.amd:
        return ("Matmuls/convolutions run off matrix cores: use bf16 autocast",
                "Run matmuls and convolutions in bf16 with torch.autocast (MFMA bf16 runs 8x "
                "the FP32 vector rate on MI200/MI300), and let TunableOp/MIOpen find pick MFMA "
                "solutions.", CODE_INFER_ROCM_BF16 if infer else CODE_ROCM_BF16)
    if p.tf32_capable:
        return ("Matmuls/convolutions run in FP32 on CUDA cores: enable TF32 or bf16 autocast",
                "Run float32 matmuls and convolutions on Tensor Cores: TF32 "
                "(torch.backends.cuda.matmul.allow_tf32 = True or "
                "torch.set_float32_matmul_precision('high'); cuDNN convolutions use TF32 by "
                "default), or bf16 with torch.autocast.",
                CODE_INFER_BF16 if infer else CODE_AMP_BF16)
    if infer:
        return ("Matmuls/convolutions run without Tensor Cores: run them in float16",
                "Run matmuls and convolutions in float16 on Tensor Cores: torch.autocast with "
                "float16 (inference has no gradients, so no loss scaling), or the model cast "
                "to float16; this GPU has no TF32 or bf16 Tensor Cores.", CODE_INFER_FP16)
    return ("Matmuls/convolutions run without Tensor Cores: enable AMP",
            "Run matmuls and convolutions in reduced precision on Tensor Cores: "
            "torch.autocast with float16 and a GradScaler (automatic mixed precision); this "
            "GPU has no TF32 or bf16 Tensor Cores.", CODE_AMP_FP16)


def check(ctx: Context) -> Finding | None:
    trace = ctx.trace
    p = ctx.premises
    if not ctx.has_gpu or not p.matrix_cores:
        return None
    dev, host = trace.device, trace.host
    owner = ctx.a.tree.device_owner
    # communication kernels are not compute: out of the denominator
    kernel = ctx.kernel_sel & ~names.mask(trace, names.is_collective_kernel)[dev.name]
    dur = ctx.device_in_steps
    eligible_name = names.mask_in(trace, names.TC_ELIGIBLE_OPS)
    gemm = names.mask(trace, names.is_gemm_or_conv_kernel)[dev.name]
    launched = kernel & (owner >= 0) & gather(eligible_name[host.name], owner, False)
    # only GEMM/convolution kernels are judged: the transposes and casts a matmul launches
    # would never run on Tensor Cores, whatever the precision
    eligible = launched & gemm
    tc = names.mask(trace, names.is_tensor_core_kernel)[dev.name]
    kernel_ns = float(dur[kernel].sum())
    launched_ns = float(dur[launched].sum())
    eligible_ns = float(dur[eligible].sum())
    off = eligible & ~tc
    off_ns = float(dur[off].sum())
    if kernel_ns <= 0 or eligible_ns <= 0:
        return None
    tc_pct = 100.0 * (eligible_ns - off_ns) / eligible_ns
    off_pct = 100.0 * off_ns / kernel_ns
    if off_pct < MIN_SHARE_PCT or tc_pct >= MAX_TC_PCT:
        return None
    off_per_step = ctx.per_step_union(dev.ts[off], dev.end[off])
    saving = off_per_step * (1.0 - 1.0 / SPEEDUP)
    dtype = _off_dtype(ctx, owner[off], dur[off])
    title, fix, code = _fix(p, dtype)
    eligible_word = "matrix-core" if p.amd else "Tensor-Core"
    evidence = [
        f"{100 * launched_ns / kernel_ns:.0f} % of GPU kernel time is launched by "
        f"{eligible_word}-eligible operators, {100 * eligible_ns / kernel_ns:.0f} % in their "
        f"GEMM/convolution kernels; {tc_pct:.0f} % of those run on {p.unit}",
        f"{fmt_ns(off_per_step)} per step of it runs off {p.unit}"
        + (f" in {dtype}" if dtype else "") + f" ({p.describe()})",
    ]
    op_ids = host.name[owner[off]]
    for name, ns, n in top_by_name(op_ids, dur[off], trace.strings, 4):
        evidence.append(f"operator {short(name)}: {fmt_ns(ns / ctx.n_steps)} per step "
                        f"({count(round(n / ctx.n_steps), 'kernel')})")
    for name, ns, _ in top_by_name(dev.name[off], dur[off], trace.strings, 3):
        evidence.append(f"kernel {short(name, 80)}: {fmt_ns(ns / ctx.n_steps)} per step")
    refs = (("https://rocm.docs.amd.com/projects/hipBLASLt/en/latest/",
             "https://pytorch.org/docs/stable/cuda.tunable.html") if p.amd else
            ("https://pytorch.org/docs/stable/amp.html",
             "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices"))
    return ctx.finding(
        id="tensor-cores", title=title, saving_ns=saving,
        estimate=(f"GEMM/convolution kernel time off {p.unit} per step (union), assuming "
                  f"{p.unit} run it {SPEEDUP:.0f}× faster (typical end-to-end; peak math is "
                  "8–16×)."),
        evidence=evidence, fix=fix, code=code,
        source_lines=ctx.source_lines(owner[off], dur[off]),
        references=refs,
    )
