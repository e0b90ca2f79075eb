"""Rule: matmuls with dimensions that tile badly on Tensor Cores / matrix cores -> pad them.

Premise: the shapes judged ran in Tensor Core / matrix-core kernels (a float32 GEMM on CUDA
cores has no Tensor Core tile to fit: the tensor-cores rule speaks for it).
"""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.analysis.efficiency.roofline import MatmulShape
from stepscope.units import count

MIN_SHARE_PCT = 5.0  # of matmul device time in misaligned shapes
SPEEDUP = 1.4  # padded shapes: typical gain of aligned over misaligned GEMMs (cuBLAS)
# elements per 16 bytes: Tensor Core kernels want M, N, K multiples of this (64 is best)
ALIGN = {"fp16": 8, "bf16": 8, "fp32": 4, "tf32": 4, "fp8": 16, "fp4": 32, "fp64": 2}

CODE = """\
# pad the vocabulary / hidden sizes to multiples of 64, e.g. 50257 -> 50304
vocab = (vocab + 63) // 64 * 64
model = GPT(vocab_size=vocab)  # your model, built with the padded sizes"""


def misaligned(s: MatmulShape) -> bool:
    a = ALIGN.get(s.dtype)
    return a is not None and any(d % a for d in (s.m, s.n, s.k))


def check(ctx: Context) -> Finding | None:
    e = ctx.a.efficiency
    if e is None or not e.on_gpu or not ctx.has_gpu:
        return None
    p = ctx.premises
    shapes = [s for s in e.matmul_shapes if s.matrix_cores]
    total = sum(s.time_ns for s in shapes)
    bad = [s for s in shapes if misaligned(s) and s.time_ns > 0]
    bad_ns = sum(s.time_ns for s in bad)
    if total <= 0 or 100 * bad_ns / total < MIN_SHARE_PCT:
        return None
    unit = "matrix-core (MFMA)" if p.amd else "Tensor Core"
    evidence = [f"{100 * bad_ns / total:.0f} % of {unit} matmul device time runs shapes with a "
                f"dimension not a multiple of the {unit} tile "
                f"({', '.join(f'{k}: {v}' for k, v in ALIGN.items() if k in {'bf16', 'fp32'})}"
                f" elements; 64 is best)"]
    for s in bad[:5]:
        odd = [f"{n}={d}" for n, d in (("M", s.m), ("N", s.n), ("K", s.k))
               if d % ALIGN[s.dtype]]
        evidence.append(f"{s.op} {s.m}x{s.k} @ {s.k}x{s.n} ({s.dtype}): "
                        f"{fmt_ns(s.time_ns / ctx.n_steps)} per step, {count(s.calls, 'call')}; "
                        f"misaligned {', '.join(odd)}")
    saving = bad_ns / ctx.n_steps * (1 - 1 / SPEEDUP)
    return ctx.finding(
        id="matmul-alignment", title="Matmul shapes tile badly: pad dimensions to multiples "
        "of 8 (64 best)", saving_ns=saving,
        estimate=(f"Misaligned matmul time per step, assuming aligned shapes run "
                  f"{SPEEDUP:.1f}x faster (typical for "
                  + ("hipBLASLt" if p.amd else "cuBLAS") + "; can be more for small K)."),
        evidence=evidence,
        fix=("Pad the model dimensions that feed these matmuls (vocabulary, hidden, head, "
             "batch x sequence) to multiples of 64, or at least 8 for 16-bit types, so "
             + ("the MFMA tiles (16x16 / 32x32 per wave)" if p.amd else "Tensor Core tiles")
             + " divide them exactly."),
        code=CODE,
        references=(("https://github.com/ROCm/amd_matrix_instruction_calculator",) if p.amd
                    else ("https://docs.nvidia.com/deeplearning/performance/dl-performance-matrix-multiplication/index.html",)),
    )
