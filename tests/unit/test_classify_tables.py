"""The documented kernel tables (stepscope.classify): every family, both ways.

Names are real kernel names from ../shared/traces (outside/, hta/, kineto_resnet50/) and
from the projects each table row cites; tests/integration/test_corpus.py runs the tables
over every kernel name in the shared traces.
"""

from __future__ import annotations

import re

import pytest

from stepscope.classify import names
from stepscope.classify.communication import (
    COMMUNICATION_KERNELS,
    communication_family,
    is_communication_kernel,
)
from stepscope.classify.matrix_cores import (
    GEMM_CONV_KERNELS,
    MATRIX_CORE_KERNELS,
    is_matrix_core_kernel,
)
from stepscope.classify.matrix_cores import HELPERS as HELPER_ROW

COMMUNICATION = [
    ("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)", "NCCL"),
    ("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "NCCL"),
    ("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)", "NCCL"),
    ("void rcclGenericKernel<1, false>(ncclDevComm*, unsigned long, ncclWork*)", "RCCL"),
    ("mscclKernel_Sum_float_LL(int, int, mscclAlgo*, mscclWork*)", "MSCCL"),
    ("void mscclpp::collective::allreduce8<float>(float*, ...)", "MSCCL++"),
    ("nvshmemi_proxy_kernel", "NVSHMEM"),
    ("void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*, ...)", "DeepEP"),
    ("void deep_ep::internode::combine<true, 8, 4>(int4*, ...)", "DeepEP"),
    ("void dpsk::ep::notify_dispatch<8>(int const*, int*, ...)", "DeepEP"),
    ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>"
     "(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)",
     "PyTorch symmetric memory"),
    ("void c10d::symmetric_memory::one_shot_all_reduce_kernel<float, 16>(float**)",
     "PyTorch symmetric memory"),
    ("void c10d::symmetric_memory::two_shot_all_reduce_kernel<float, 16, 8>(float**)",
     "PyTorch symmetric memory"),
    ("void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, ...)",
     "vLLM/SGLang custom all-reduce"),
    ("void sglang::cross_device_reduce_2stage<half, 8>(sglang::RankData*, ...)",
     "vLLM/SGLang custom all-reduce"),
    ("void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecFP>(...)",
     "vLLM/SGLang custom all-reduce"),
    ("void tensorrt_llm::kernels::oneShotAllReduceKernel<__nv_bfloat16, 8>(...)",
     "TensorRT-LLM/FlashInfer custom all-reduce"),
    ("void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<...>",
     "TensorRT-LLM/FlashInfer custom all-reduce"),
]
NOT_COMMUNICATION = [
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, ...>>(...)",
    "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>",
    "void cublasLt::splitKreduce_kernel<32, 16, int, float, float>(...)",
    "void moe::dev::finalize::finalizeKernelVecLoad<...>(...)",
    "void splitKreduce_kernel<float, float, float>(cublasSplitKParams<float>, ...)",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
]

MATRIX = [
    "volta_h884gemm_64x64_ldg8_nn",
    "void cudnn::cnn::dgrad_1x1_stride_2x2<float, 3>(...)",
    "turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn",
    "ampere_fp16_s16816gemm_fp16_128x256_ldg8_relu_f2f_stages_64x3_tn",
    "sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16"
    "_stage4_warpsize2x2x1_g1_tensor16x8x8_execute_kernel_cudnn",
    "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute"
    "_segment_k_off_kernel__5x_cublas",
    "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(...)",
    "void cutlass::Kernel<cutlass_80_wmma_tensorop_f16_s161616gemm_f16_16x16_64x1_nn_align8>()",
    "void cutlass::device_kernel<cutlass3x_sm90_tensorop_gemm_bf16_bf16_f32_bf16_128x128x64>()",
    "void cutlass::device_kernel<cutlass3x_sm100_bstensorop_s256x128gemm_ue8m0xf4_f32_bf16>()",
    "sm90_gemm_bf16_f32_wgmma_128x256",
    "void kernel_tcgen05_mma_fp8_block_scaled<...>()",
    "nvjet_tst_64x64_64x16_2x1_2cta_v_bz_bias_TNT",
    "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_NNT",
    "bmm_MxE4m3_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM_TN"
    "_transOut_schedP2x1x2x3_biasM_bN_tma_tmaOpt_clmp_swiGlu_dynBatch_sm100f",
    "bmm_Bfloat16_MxE2m1MxE4m3_Fp32_t128x16x256u2_s3_et128x16_m128x16x32_cga1x1x1_16dp256b_rM"
    "_TN_transOut_schedP2x1x2x3_biasM_bN_tmaOpt_clmp_dynBatch_sm100f",
    "gemm_E4m3_E4m3_Fp32_t128x128x128_s4_sm90a",
    "void deep_gemm::fp8_gemm_kernel<4096, 7168, 128, 160, 128, 1, 5>(...)",
    "void cutlass::device_kernel<grouped_fp8_gemm_sm90<...>>()",
    "void pytorch_flash::flash_fwd_kernel<pytorch_flash::Flash_fwd_kernel_traits<64, 128>>()",
    "void flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4>>()",
    "void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<...>>>()",
    "fmhaSm100aKernel_QkvE4m3OBfloat16H64PagedKvCausalP16VarSeqQ128Kv128PersistentContext",
    "fmha_cutlassF_bf16_aligned_64x64_rf_sm80(PyTorchMemEffAttention::AttentionKernel<...>)",
    "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1",
    "Cijk_Ailk_Bjlk_SB_Bias_AS_SAV_UserArgs_MT64x16x16_MI16x16x1_SN_LDSB0_AFC1_AFEM1",
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0",
    "void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemm_xdl_cshuffle_v3<...>>()",
    "void ck::kernel_gemm_wmma<ck::GridwiseGemm_k0mk1_k0nk1_mn_wmma<...>>()",
    "_ZN5aiter41fmha_fwd_hd128_bf16_causal_a32_rtz_pssk_recompileE",
    "attn_fwd",
    "_attn_fwd_inner",
    # issue 21: TF32 xmma, FP8 grouped GEMMs, MIOpen XDLOPS, CUTLASS templates, Triton matmuls
    "sm80_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize32x32x64_stage3_warpsize2x1x2_tensor16x8x8",
    "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute"
    "_segment_k_off_kernel__5x_cublas",
    "void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c_outfmt_head::GemmKernel>"
    "(dpsk::grouped_gemm::cuda::fp8_ptp128c_outfmt_head::GemmKernel::Params)",
    "void dpsk::gemm::fp8_gemm_kernel<7168u, 16384u, 128u, 128u, 128u, 5u, 128u, 128u, 2u, "
    "(dpsk::gemm::GemmType)0>(__nv_bfloat16*, float*, int*, unsigned int, unsigned int)",
    "void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 256u, 128u, 128u, 0u, 128u, 4u, 3u, 128u, "
    "128u, 1u, true, (deep_gemm::GemmType)2>(__nv_bfloat16*, float*, int*, unsigned int)",
    # CUTLASS template instances (signatures shortened; the tags are CUTLASS's)
    "void cutlass::Kernel<cutlass::gemm::kernel::GemmGrouped<cutlass::gemm::threadblock::"
    "MmaMultistage<cutlass::gemm::GemmShape<128, 128, 32>, cutlass::arch::OpClassTensorOp>>>()",
    "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::"
    "GroupProblemShape<cute::tuple<int, int, int>>, cutlass::gemm::collective::CollectiveMma<"
    "cutlass::gemm::MainloopSm90TmaGmmaWarpSpecialized<4, cute::tuple<cute::C<2>>>>>>()",
    "igemm_fwd_gtcx2_nhwc_fp16_bx0_ex0_bt128x64x32_wt32x32x8_ws1x1_wr1x2_ta1x16x1x1_1x2x4x32"
    "_tb1x8x1x1_1x4x1x64_pta_vs1_gkgs",
    "igemm_fwd_gtcx3_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64"
    "_tb1x8x2x1_1x4x1x64_gkgs",
    "gridwise_convolution_forward_implicit_gemm_v4r4_xdlops_nchw_kcyx_nkhw",
    "triton_tem_fused_mm_0",
    "triton_tem_fused_addmm_relu_1",
    "_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1_swiglu",
    "_p_matmul_ogs_NNT_bf16xbf16xmxfp4_128x256x128x1",
    # Marlin mixed-input GEMMs and vLLM's Triton fused-MoE GEMM (quantised and MoE serving)
    "void marlin::Marlin<256, 1, 8, 8, 4, 8>(int4 const*, int4 const*, int4*, int4 const*, "
    "int, int, int, int, int*)",
    "void marlin_moe_wna16::Marlin<(vllm::ScalarTypeId)5, 256, 1, 8, 4, false, 4, 8>(...)",
    "fused_moe_kernel",
    "fused_moe_kernel_gptq_awq",
]
NOT_MATRIX = [
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(...)",
    "ampere_sgemm_128x64_nn",
    "volta_sgemm_128x64_nt",
    "volta_scudnn_128x64_relu_interior_nn_v1",
    "_5x_cudnn_ampere_fp16_scudnn_fp16_128x32_relu_small_nn_v1",
    "void vllm::scaled_fp8_quant_kernel_strided<c10::BFloat16, c10::Float8_e4m3fn>(...)",
    "void tensorrt_llm::kernels::quantize_with_block_size<(tensorrt_llm::BlockScaleQuantization"
    "Type)2, __nv_bfloat16, 32, true>(int, int, int, int)",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false>(...)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<int>>(...)",
    "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)",
    # issue 21: FP32 xmma kernels on CUDA cores (FFMA), SIMT CUTLASS templates, helpers of
    # GEMM libraries, non-XDLOPS MIOpen igemm, Inductor pointwise kernels
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4"
    "_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4"
    "_alignc4_execute_kernel__5x_cublas",
    "sm80_xmma_fprop_implicit_gemm_indexed_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize64x64x8"
    "_stage3_warpsize1x4x1_g1_ffma_aligna4_alignc4",
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize32x64x8_stage3_warpsize1x2x1",
    "void cutlass::Kernel<cutlass::gemm::kernel::Gemm<cutlass::gemm::threadblock::MmaPipelined<"
    "cutlass::gemm::GemmShape<128, 128, 8>, cutlass::arch::OpClassSimt>>>()",
    "void dpsk::grouped_gemm::cuda::utils::transpose<512, 128, 4, 4>(float*, float const*)",
    "triton_poi_fused_add_mul_0",
    "triton_red_fused_sum_1",
    # helpers around Marlin and the fused MoE (permutations, routing): not GEMMs
    "void marlin::permute_cols_kernel<4>(int4 const*, int const*, int4*, int, int, int)",
    "void vllm::moe::moe_align_block_size_kernel<int>(int const*, int*, int*, int*, int)",
]


@pytest.mark.parametrize(("name", "family"), COMMUNICATION)
def test_communication_rows(name: str, family: str) -> None:
    assert is_communication_kernel(name)
    assert names.is_collective_kernel(name)
    assert communication_family(name) == family


@pytest.mark.parametrize("name", NOT_COMMUNICATION)
def test_not_communication(name: str) -> None:
    assert not is_communication_kernel(name)


@pytest.mark.parametrize("name", MATRIX)
def test_matrix_core_rows(name: str) -> None:
    assert is_matrix_core_kernel(name)
    assert names.is_tensor_core_kernel(name)


@pytest.mark.parametrize("name", NOT_MATRIX)
def test_not_matrix_core(name: str) -> None:
    assert not is_matrix_core_kernel(name)


def test_every_row_is_documented_and_used() -> None:
    """Each row has a source, compiles, and at least one name above matches it."""
    examples = [n for n, _ in COMMUNICATION]
    for p in COMMUNICATION_KERNELS:
        assert len(p.source) > 20
        assert any(re.search(p.regex, n) for n in examples), p.family
    for p in MATRIX_CORE_KERNELS:
        assert len(p.source) > 20
        assert any(re.search(p.regex, n) for n in MATRIX), p.regex


@pytest.mark.parametrize("name", ["record_param_comms", "c10d::allreduce_",
                                  "c10d::alltoall_base_", "nccl:all_reduce", "gloo:broadcast",
                                  "symm_mem::multimem_all_reduce_",
                                  "symm_mem::two_shot_all_reduce_", "vllm::all_reduce",
                                  "_C_custom_ar::all_reduce"])
def test_host_ops_marked_as_collectives(name: str) -> None:
    assert names.is_collective_host(name)


@pytest.mark.parametrize("name", ["aten::all", "c10d::wait", "record_function", "aten::add",
                                  "symm_mem::rendezvous", "vllm::moe_forward"])
def test_host_ops_not_collectives(name: str) -> None:
    assert not names.is_collective_host(name)


# GEMM/convolution kernels a Tensor Core rule may judge, and the helpers it must not cite
GEMM_CONV = [
    "volta_scudnn_128x128_stridedB_splitK_small_nn_v1",
    "ampere_sgemm_128x64_nn",
    "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false>(...)",
    "void cutlass::Kernel2<cutlass_80_simt_sgemm_128x32_8x5_nn_align1>(...)",
    "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma_aligna4"
    "_alignc4_execute_kernel__5x_cublas",
    "void cudnn::cnn::conv2d_grouped_direct_kernel<false, true, false, false, 0, 0, int, float>",
    "igemm_fwd_gtcx3_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1_1x4x1x64"
    "_tb1x8x2x1_1x4x1x64_gkgs",
    "Cijk_Ailk_Bljk_HHS_BH_MT128x128x32_MI32x32x8x1_SN_1LDSB0_APM1_ABV0",
]
HELPERS = [
    "void nchwToNhwcKernel<float, float, float, true, false, (cudnnKernelDataType_t)0>(...)",
    "void splitKreduce_kernel<float, float, float, float>(cublasSplitKParams<float>, ...)",
    "void dpsk::grouped_gemm::cuda::utils::transpose<512, 128, 4, 4>(float*, float const*)",
    "void cudnn::ops::scalePackedTensor_kernel<float, float>(cudnnTensor4dStruct, float*, float)",
    "void cudnn::cnn::im2col4d_kernel<float, long>(cudnn::cnn::im2col4d_params, ...)",
    "cask_cudnn::computeOffsetsKernel(cask_cudnn::ComputeOffsetsParams)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float>>(...)",
]


@pytest.mark.parametrize("name", GEMM_CONV)
def test_gemm_and_conv_kernels(name: str) -> None:
    assert names.is_gemm_or_conv_kernel(name)


@pytest.mark.parametrize("name", HELPERS)
def test_helpers_are_not_gemms(name: str) -> None:
    assert not names.is_gemm_or_conv_kernel(name)


def test_every_gemm_row_is_documented_and_used() -> None:
    for p in GEMM_CONV_KERNELS:
        assert len(p.source) > 20
        assert any(re.search(p.regex, n) for n in GEMM_CONV), p.regex
    assert all(re.search(HELPER_ROW.regex, n) for n in HELPERS[:-1])
