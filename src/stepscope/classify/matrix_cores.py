"""Tensor Core (NVIDIA) and matrix-core (AMD CDNA MFMA, RDNA WMMA) kernels: the table.

A kernel runs on Tensor/matrix cores when its name matches a row of MATRIX_CORE_KERNELS
and no row of NOT_MATRIX_CORE (CUDA-core variants carrying the same libraries' prefixes).
Patterns are searched anywhere in the name. Names say nothing about a Triton or hand-written
kernel that uses ``tl.dot``/``mma`` without a telling name: those count as not on Tensor
Cores. Triton matmuls with a telling name (Inductor's ``triton_tem_*`` templates,
triton_kernels' ``matmul_ogs``) count as matrix-core work by name (docs/metrics.md, "Tensor
Core share": ``tl.dot`` lowers to mma/wgmma/MFMA for 16- and 8-bit inputs, and for float32
unless TF32 is off on NVIDIA, which the name cannot tell).
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
            "FP8 and grouped FP8 GEMMs: DeepGEMM (deep_gemm::*, dpsk::gemm::fp8_gemm_kernel), "
            "CUTLASS FP8 block-scaled grouped GEMM, vLLM/SGLang fp8 gemm kernels"),
    Pattern("nvidia", r"dpsk::grouped_gemm::(\w+::)*\w*GemmKernel",
            "DeepSeek's grouped GEMMs: cutlass::device_kernel<dpsk::grouped_gemm::cuda::"
            "fp8_ptp128c*::GemmKernel> (CUTLASS 3 FP8 grouped GEMM on wgmma); the namespace's "
            "utils::transpose helpers are not GEMMs"),
    Pattern("nvidia", r"OpClassTensorOp|Gmma|GMMA",
            "CUTLASS template arguments in the kernel's signature: cutlass::arch::OpClassTensorOp "
            "(CUTLASS 2 mma.sync), MainloopSm90TmaGmma* / GMMA (CUTLASS 3 Hopper warpgroup MMA), "
            "e.g. GemmGrouped / GemmUniversal instances without a cutlass_* kernel name"),
    Pattern("nvidia", r"^triton_tem_|matmul_ogs",
            "Triton matmul kernels by name: TorchInductor templates (triton_tem_fused_mm_0, "
            "triton_tem_fused_addmm_relu_1, bmm/conv/flex_attention templates: Inductor emits "
            "triton_tem_ only for tl.dot templates; pointwise/reductions are triton_poi/red/per) "
            "and triton_kernels' matmul_ogs / _p_matmul_ogs (vLLM/gpt-oss MoE): tl.dot lowers "
            "to mma/wgmma (NVIDIA) or MFMA (AMD)"),
    Pattern("nvidia", r"\bmarlin\w*::Marlin",
            "Marlin mixed-input GEMMs (4/8-bit weights x 16-bit activations) in vLLM, SGLang "
            "and Aphrodite: marlin::Marlin<...> (GPTQ/AWQ/FP8 Marlin), marlin_moe_wna16::"
            "Marlin<...> (MoE); the weights are dequantised in registers and fed to mma.sync "
            "m16n8k16"),
    Pattern("any", r"^fused_moe_kernel",
            "vLLM's Triton fused-MoE GEMM (fused_moe_kernel, fused_moe_kernel_gptq_awq; the "
            "same kernel name in SGLang and LMDeploy): one tl.dot per expert block on 16- or "
            "8-bit inputs, lowered to mma/wgmma (NVIDIA) or MFMA (AMD)"),
    # --- AMD CDNA / RDNA ---
    Pattern("amd", r"Cijk_\w*_MI\d+x\d+x\d+",
            "ROCm Tensile/hipBLASLt solution names: MI<M>x<N>x<K> = the MFMA matrix "
            "instruction used (Cijk_Alik_Bljk_..._MI16x16x1_...)"),
    Pattern("amd", r"(?i:xdl|mfma)",
            "ROCm composable_kernel: *_xdl_* / DeviceGemmXdl* (XDL = MFMA XDLOPS), MIOpen "
            "*_xdlops_* implicit-GEMM convolutions, rocBLAS/aiter *mfma* kernels"),
    Pattern("amd", r"\bigemm_(fwd|bwd|wrw)_gtcx\d*_",
            "MIOpen assembly implicit-GEMM convolutions (ConvAsmImplicitGemmGTCDynamic*Xdlops*): "
            "igemm_fwd_gtcx2_nhwc_fp16_* / igemm_wrw_gtcx3_* are built from "
            "dynamic_igemm/igemm_gtc_xdlops_* (gtcx = XDLOPS for gfx908, x2 gfx90a, x3 gfx94x; "
            "wt32x32x8 = the MFMA wave tile); the non-XDLOPS variants are igemm_*_gtc_* (no x)"),
    Pattern("amd", r"(?i:ck\w*::\w*wmma|wmma_)",
            "composable_kernel WMMA kernels (RDNA3/4 matrix cores), rocWMMA"),
    Pattern("amd", r"^_?attn_(fwd|bwd)",
            "Triton flash attention (tutorial 06 _attn_fwd; ROCm flash-attention Triton "
            "backend attn_fwd): tl.dot on MFMA / mma"),
)

# CUDA-core (SIMT) variants carrying a tensor-core library's prefix: these win over the rows
# above (an sm80_xmma_gemm_*_ffma_* kernel is an xmma kernel, but not a Tensor Core one).
NOT_MATRIX_CORE: tuple[Pattern, ...] = (
    Pattern("nvidia", r"_simt_|\bsimt_|OpClassSimt",
            "CUTLASS SIMT kernels: the library names them cutlass_80_simt_sgemm_* (vs "
            "*_tensorop_*) and instantiates them with cutlass::arch::OpClassSimt (vs "
            "OpClassTensorOp): CUDA cores"),
    Pattern("nvidia", r"_ffma(_|$)",
            "cuBLAS/cuDNN/TensorRT xmma kernels name the math instruction they are built on: "
            "*_tensor16x8x8 / hmma / imma for Tensor Cores, *_ffma_* for FFMA, the CUDA-core "
            "FP32 fused multiply-add (sm80_xmma_gemm_f32f32_f32f32_f32_*_ffma_*: cuBLAS FP32 "
            "GEMM with TF32 off; TensorRT picks these tactics when TF32 is disabled)"),
    Pattern("nvidia", r"xmma_\w*(?<![a-z0-9])f32f32_f32f32_f32(?![0-9])",
            "xmma type signature <A><B>_<math A><math B>_<accumulator>: all-FP32 "
            "(f32f32_f32f32_f32) is the FP32 SIMT path; TF32 Tensor Core kernels read "
            "f32f32_tf32f32_f32 (sm80/sm90_xmma_gemm_f32f32_tf32f32_f32_*_tensor16x8x8), "
            "16-bit ones bf16bf16_bf16f32_f32"),
)

# GEMM and convolution kernels that may run off matrix cores: what a rule judging matmuls
# and convolutions looks at besides the matrix-core kernels above. Library helpers launched
# by the same operators (layout transposes, casts, split-K reductions, im2col) are not
# GEMMs: HELPERS removes them, so a rule never cites a transpose as "a GEMM off Tensor Cores".
GEMM_CONV_KERNELS: tuple[Pattern, ...] = (
    Pattern("nvidia", r"(?i:gemm|gemv)",
            "cuBLAS/CUTLASS/rocBLAS GEMM and GEMV kernels of every precision: ampere_sgemm_*, "
            "volta_dgemm_*, gemv2T_kernel_val, gemmSN_*, cutlass_80_simt_sgemm_*"),
    Pattern("nvidia", r"(?i:scudnn|cudnn::cnn::|convolve|winograd|fft2d|fprop|dgrad|wgrad"
            r"|conv2d|conv_depthwise|depthwise_conv)",
            "cuDNN and PyTorch native convolutions: *_scudnn_*, implicit_convolve_sgemm, "
            "cudnn::cnn::conv2d_grouped_direct_kernel, winograd, fft2d_r2c, xmma fprop/dgrad/"
            "wgrad, at::native conv_depthwise2d_*"),
    Pattern("amd", r"(?i:igemm|miopen\w*conv|naive_conv|gridwise_convolution|Cijk_)",
            "MIOpen convolutions (igemm_*, MIOpenConv*, miopenSp3AsmConv*, naive_conv_*, "
            "gridwise_convolution_*) and Tensile/hipBLASLt GEMMs (Cijk_*)"),
)
HELPERS = Pattern(
    "any", r"(?i:transpose|nchwtonhwc|nhwctonchw|elementwise|copy|cast|convert|fill|memset"
    r"|reduce|im2col|col2im|transform|scalepacked|computeoffsets)",
    "layout, cast and reduction helpers that GEMM/convolution libraries launch around the "
    "math: cudnn::ops::nchwToNhwcKernel, dpsk::grouped_gemm::cuda::utils::transpose, "
    "cublasLt::splitKreduce_kernel (split-K GEMMs themselves, volta_scudnn_*_splitK_*, are "
    "GEMMs), winograd transforms, im2col, cudnn::ops::scalePackedTensor_kernel, "
    "cask_cudnn::compute*OffsetsKernel")

_YES = re.compile("|".join(f"(?:{p.regex})" for p in MATRIX_CORE_KERNELS))
_NO = re.compile("|".join(f"(?:{p.regex})" for p in NOT_MATRIX_CORE))
_GEMM = re.compile("|".join(f"(?:{p.regex})" for p in GEMM_CONV_KERNELS))
_HELPER = re.compile(HELPERS.regex)


def is_matrix_core_kernel(name: str) -> bool:
    """True when the kernel name says it runs on Tensor Cores / matrix cores."""
    return _YES.search(name) is not None and _NO.search(name) is None


def is_gemm_or_conv_kernel(name: str) -> bool:
    """A matrix-core kernel, or a GEMM/convolution kernel on CUDA cores (not a helper)."""
    if is_matrix_core_kernel(name):
        return True
    return _GEMM.search(name) is not None and _HELPER.search(name) is None
