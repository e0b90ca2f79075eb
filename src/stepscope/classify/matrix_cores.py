"""Tensor Core (NVIDIA) and matrix-core (AMD CDNA MFMA, RDNA WMMA) kernels: the table.

A kernel runs on Tensor/matrix cores when its name matches a row of MATRIX_CORE_KERNELS
and no row of NOT_MATRIX_CORE (SIMT variants of the same libraries). Patterns are searched
anywhere in the name. Names say nothing about a Triton or hand-written kernel that uses
``tl.dot``/``mma`` without a telling name: those count as not on Tensor Cores (documented
in docs/metrics.md).
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Pattern(NamedTuple):
    vendor: str
    regex: str
    source: str


MATRIX_CORE_KERNELS: tuple[Pattern, ...] = (
    # --- NVIDIA, Volta -> Ampere: cuBLAS/cuDNN naming (NVIDIA PyProf, torch-tb-profiler) ---
    Pattern("nvidia", r"h884|s884|h1688|s1688|c1688|hmma|i8816|16816|s161616",
            "NVIDIA PyProf / torch-tb-profiler tensor-core token list: <type><MMA shape> "
            "(h884 = fp16 8x8x4 Volta HMMA, s1688/16816 = Turing/Ampere mma.sync)"),
    Pattern("nvidia", r"dgrad_1x1_stride_2x2|first_layer_wgrad_kernel|conv1x1|conv2d_c1_k1"
            r"|direct_group",
            "NVIDIA PyProf / torch-tb-profiler: cuDNN tensor-core convolution kernels"),
    Pattern("nvidia", r"xmma",
            "cuDNN/cuBLAS xmma kernels (sm70+_xmma_gemm/fprop/dgrad/wgrad ...): NVIDIA's "
            "tensor-core kernel library, e.g. sm80_xmma_fprop_implicit_gemm_tf32, "
            "sm90_xmma_gemm_bf16bf16"),
    Pattern("nvidia", r"tensorop|wmma",
            "CUTLASS: cutlass_80_tensorop_*, cutlass3x_sm90_tensorop_*, Blackwell bstensorop "
            "(block-scaled), cutlass_*_wmma_tensorop_* (CUDA WMMA API)"),
    Pattern("nvidia", r"wgmma|tcgen05|\bumma\b|warpgroup",
            "PTX: Hopper wgmma (warpgroup MMA), Blackwell tcgen05 (UMMA) in CUTLASS 3 / "
            "cuBLAS kernel names (warpgroupsize*)"),
    Pattern("nvidia", r"^nvjet",
            "cuBLAS 12.x JIT GEMM kernels for Hopper/Blackwell (nvjet_tst_*, nvjet_hsh_*)"),
    Pattern("nvidia", r"\bsm(7[05]|8\d|9\d|1[0-2]\d)[af]?_\w*(gemm|conv|fprop|dgrad|wgrad)",
            "cuBLAS/cuDNN/CUTLASS arch-prefixed GEMM and convolution kernels: sm80_*, sm90_*, "
            "sm100_* (Ampere, Hopper, Blackwell)"),
    Pattern("nvidia", r"(gemm|bmm)\w*_sm(90|10\d|12\d)[af]?\b",
            "TensorRT-LLM generated GEMMs (trtllm-gen): bmm_*_sm100f, gemm_*_sm90a"),
    Pattern("nvidia", r"(?i:flash_?(fwd|bwd|attn)|pytorch_flash::|\bflash::|flashattn)",
            "FlashAttention 2 (flash_fwd_kernel, pytorch_flash:: in PyTorch SDPA) and 3 "
            "(flash::FlashAttnFwdSm90): mma.sync / wgmma attention"),
    Pattern("nvidia", r"(?i:fmha)",
            "fused multi-head attention: cuDNN/TensorRT-LLM fmhaSm90/fmhaSm100a kernels, "
            "xformers/PyTorch mem-efficient fmha_cutlassF/B, CK and aiter fmha on AMD"),
    Pattern("nvidia", r"(?i:^(bmm|gemm|mm)_\w*(e4m3|e5m2|e2m1|mxf[48]|nvf4))",
            "FP8 (e4m3/e5m2) and MX/NV-FP4 (e2m1) block-scaled GEMMs (trtllm-gen bmm_MxE4m3_"
            "MxE2m1..., Blackwell tcgen05.mma.kind::mxf8f6f4)"),
    Pattern("nvidia", r"(?i:fp8\w*gemm|gemm\w*fp8|deep_gemm::|blockscaled\w*gemm)",
            "FP8 and grouped FP8 GEMMs: DeepGEMM (deep_gemm::*), CUTLASS FP8 block-scaled "
            "grouped GEMM, vLLM/SGLang fp8 gemm kernels"),
    # --- AMD CDNA / RDNA ---
    Pattern("amd", r"Cijk_\w*_MI\d+x\d+x\d+",
            "ROCm Tensile/hipBLASLt solution names: MI<M>x<N>x<K> = the MFMA matrix "
            "instruction used (Cijk_Alik_Bljk_..._MI16x16x1_...)"),
    Pattern("amd", r"(?i:xdl|mfma)",
            "ROCm composable_kernel: *_xdl_* / DeviceGemmXdl* (XDL = MFMA XDLOPS), "
            "rocBLAS/aiter *mfma* kernels"),
    Pattern("amd", r"(?i:ck\w*::\w*wmma|wmma_)",
            "composable_kernel WMMA kernels (RDNA3/4 matrix cores), rocWMMA"),
    Pattern("amd", r"^_?attn_(fwd|bwd)",
            "Triton flash attention (tutorial 06 _attn_fwd; ROCm flash-attention Triton "
            "backend attn_fwd): tl.dot on MFMA / mma"),
)

# SIMT variants carrying a tensor-core library's prefix.
NOT_MATRIX_CORE: tuple[Pattern, ...] = (
    Pattern("nvidia", r"_simt_|\bsimt_",
            "CUTLASS SIMT kernels (cutlass_80_simt_sgemm_*): CUDA cores"),
)

_YES = re.compile("|".join(f"(?:{p.regex})" for p in MATRIX_CORE_KERNELS))
_NO = re.compile("|".join(f"(?:{p.regex})" for p in NOT_MATRIX_CORE))


def is_matrix_core_kernel(name: str) -> bool:
    """True when the kernel name says it runs on Tensor Cores / matrix cores."""
    return _YES.search(name) is not None and _NO.search(name) is None
