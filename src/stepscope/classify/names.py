"""Name-based classification of events, in one place.

PyTorch identifies steps, loaders, collectives and launch calls only by name; these
predicates collect every spelling seen across PyTorch versions and vendors.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from stepscope.classify import matrix_cores
from stepscope.classify.communication import is_communication_kernel
from stepscope.classify.matrix_cores import is_matrix_core_kernel
from stepscope.model.trace import Trace

COLLECTIVES = (
    "broadcast",
    "reduce",
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "allreduce",
    "allgather",
    "barrier",
    "send",
    "recv",
    "_allgather_base",
    "_reduce_scatter_base",
    "gather",
    "scatter",
    "alltoall",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "all_to_all_single",
)
_COLLECTIVE_HOST = re.compile(r"^(nccl|gloo|rccl|mpi|xccl):(" + "|".join(COLLECTIVES) + r")$")
# Host ops the trace itself marks as collectives: c10d's record_param_comms (it carries the
# "Collective name" and process-group args) and the c10d::<collective>_ dispatcher ops.
# Also the ops of PyTorch symmetric memory (symm_mem::multimem_all_reduce_, ...) and the
# collective ops vLLM registers (vllm::all_reduce, _C_custom_ar::all_reduce).
_COLLECTIVE_MARKED = re.compile(
    r"^(record_param_comms$|c10d::(" + "|".join(COLLECTIVES) + r"|alltoall_base|allgather_"
    r"|allgather_into_tensor_coalesced|reduce_scatter_tensor_coalesced|allreduce_coalesced)_?$"
    r"|symm_mem::\w*(all_reduce|all_gather|reduce_scatter|all_to_all|broadcast)\w*$"
    r"|vllm::(all_reduce|all_gather|reduce_scatter|all_to_all\w*|outplace_all_reduce)$"
    r"|_C_custom_ar::all_reduce\w*$)"
)

# Substrings of kernel names that run on Tensor Cores: NVIDIA PyProf's list, as used by
# torch-tb-profiler. Kept for reference: is_tensor_core_kernel uses the larger documented
# table in stepscope.classify.matrix_cores, which contains these tokens.
TC_TOKENS = (
    "h884",
    "s884",
    "h1688",
    "s1688",
    "hmma",
    "i8816",
    "16816",
    "dgrad_1x1_stride_2x2",
    "first_layer_wgrad_kernel",
    "conv1x1",
    "conv2d_c1_k1",
    "direct_group",
    "xmma_implicit_gemm",
    "xmma_sparse_conv",
    "xmma_warp_specialized_implicit_gemm",
    "xmma_gemm",
    "xmma_sparse_gemm",
    "c1688",
)

# Operators that can run on Tensor Cores (autocast fp16 list, as torch-tb-profiler).
TC_ELIGIBLE_OPS = frozenset(
    {
        "aten::_convolution",
        "aten::conv1d",
        "aten::conv2d",
        "aten::conv3d",
        "aten::conv_tbc",
        "aten::conv_transpose1d",
        "aten::conv_transpose2d",
        "aten::conv_transpose3d",
        "aten::convolution",
        "aten::cudnn_convolution",
        "aten::cudnn_convolution_transpose",
        "aten::prelu",
        "aten::addmm",
        "aten::addmv",
        "aten::addr",
        "aten::matmul",
        "aten::mm",
        "aten::mv",
        "aten::linear",
        "aten::addbmm",
        "aten::baddbmm",
        "aten::bmm",
        "aten::chain_matmul",
        "aten::linalg_multi_dot",
        "aten::_thnn_fused_lstm_cell",
        "aten::_thnn_fused_gru_cell",
        "aten::lstm_cell",
        "aten::gru_cell",
        "aten::rnn_tanh_cell",
        "aten::rnn_relu_cell",
        "aten::cudnn_convolution_backward_input",
        "aten::cudnn_convolution_backward_weight",
        "aten::convolution_backward",
        "aten::cudnn_convolution_backward",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_scaled_dot_product_flash_attention",
        "aten::_scaled_mm",
        "aten::addmm_",
        "CudnnConvolutionBackward",
        "BmmBackward0",
        "MmBackward",
        "AddmmBackward",
        "AddmvBackward",
        "MvBackward",
        "AddbmmBackward",
        "CudnnConvolutionTransposeBackward",
    }
)

# torch.autocast's CUDA op lists (PyTorch's "Automatic Mixed Precision" page, "CUDA Op-Specific
# Behavior"; the same lists drive ROCm): the operators it runs in the lower precision (their
# float32 inputs are cast down) and those it runs in float32 (their fp16/bf16 inputs are
# cast up). The dispatcher records each cast as an aten::to called by that operator.
AUTOCAST_LOWER_PRECISION_OPS = frozenset({
    "aten::addbmm", "aten::addmm", "aten::addmv", "aten::addr", "aten::baddbmm", "aten::bmm",
    "aten::chain_matmul", "aten::linalg_multi_dot", "aten::conv1d", "aten::conv2d",
    "aten::conv3d", "aten::conv_transpose1d", "aten::conv_transpose2d",
    "aten::conv_transpose3d", "aten::gru_cell", "aten::linear", "aten::lstm_cell",
    "aten::matmul", "aten::mm", "aten::mv", "aten::prelu", "aten::rnn_relu_cell",
    "aten::rnn_tanh_cell", "aten::scaled_dot_product_attention",
})
AUTOCAST_FP32_OPS = frozenset({
    "aten::pow", "aten::rdiv", "aten::rpow", "aten::rtruediv", "aten::acos", "aten::asin",
    "aten::binary_cross_entropy_with_logits", "aten::cosh", "aten::cosine_embedding_loss",
    "aten::cdist", "aten::cosine_similarity", "aten::cross_entropy_loss", "aten::cumprod",
    "aten::cumsum", "aten::dist", "aten::erfinv", "aten::exp", "aten::expm1",
    "aten::group_norm", "aten::hinge_embedding_loss", "aten::kl_div", "aten::l1_loss",
    "aten::layer_norm", "aten::log", "aten::log_softmax", "aten::log10", "aten::log1p",
    "aten::log2", "aten::margin_ranking_loss", "aten::mse_loss",
    "aten::multilabel_margin_loss", "aten::multi_margin_loss", "aten::nll_loss", "aten::norm",
    "aten::pdist", "aten::poisson_nll_loss", "aten::prod", "aten::reciprocal", "aten::rsqrt",
    "aten::sinh", "aten::smooth_l1_loss", "aten::soft_margin_loss", "aten::softmax",
    "aten::softmin", "aten::softplus", "aten::sum", "aten::renorm", "aten::tan",
    "aten::triplet_margin_loss",
})

LAUNCH_CALLS = frozenset(
    {
        "cudaLaunchKernel",
        "cudaLaunchKernelExC",
        "cuLaunchKernel",
        "cuLaunchKernelEx",
        "cudaLaunchCooperativeKernel",
        "cudaLaunchCooperativeKernelMultiDevice",
        "cudaGraphLaunch",
        "cuGraphLaunch",
        "hipLaunchKernel",
        "hipExtLaunchKernel",
        "hipExtModuleLaunchKernel",
        "hipModuleLaunchKernel",
        "hipGraphLaunch",
        "runFunction",
        # Intel XPU (XPUPTI's runtime view): Unified Runtime, its PI predecessor, Level Zero
        "urEnqueueKernelLaunch",
        "piEnqueueKernelLaunch",
        "zeCommandListAppendLaunchKernel",
    }
)
COPY_CALLS = frozenset(
    {
        "cudaMemcpyAsync",
        "cudaMemsetAsync",
        "cudaMemcpy",
        "cudaMemset",
        "cudaMemcpy2DAsync",
        "cudaMemcpyPeerAsync",
        "hipMemcpyAsync",
        "hipMemsetAsync",
        "hipMemcpyWithStream",
        "hipMemcpy",
        "hipMemset",
    }
)
# ATen operators that never launch device work, whatever device their tensors are on: the
# view operators of PyTorch's "Tensor Views" page (they return a tensor sharing storage:
# only metadata changes), the ones that return a view when they can (reshape, flatten:
# a copy they make shows as a launched kernel under them), detach/alias, and allocation
# without initialisation (empty*, which the caching allocator serves on the host).
# Sources: https://pytorch.org/docs/stable/tensor_view.html, native_functions.yaml.
NO_DEVICE_WORK_OPS = frozenset({
    "aten::view", "aten::view_as", "aten::_unsafe_view", "aten::_reshape_alias",
    "aten::reshape", "aten::reshape_as", "aten::flatten", "aten::unflatten",
    "aten::as_strided", "aten::expand", "aten::expand_as", "aten::permute", "aten::movedim",
    "aten::transpose", "aten::swapaxes", "aten::swapdims", "aten::t", "aten::numpy_T",
    "aten::adjoint", "aten::mT", "aten::mH", "aten::select", "aten::slice", "aten::narrow",
    "aten::diagonal", "aten::squeeze", "aten::unsqueeze", "aten::unfold", "aten::unbind",
    "aten::split", "aten::split_with_sizes", "aten::tensor_split", "aten::chunk",
    "aten::hsplit", "aten::vsplit", "aten::view_as_real", "aten::view_as_complex",
    "aten::real", "aten::imag", "aten::alias", "aten::detach", "aten::detach_",
    "aten::lift_fresh", "aten::empty", "aten::empty_like", "aten::empty_strided",
    "aten::new_empty", "aten::new_empty_strided", "aten::resize_",
    # metadata only: the promoted dtype of the inputs; views of a flat buffer (DDP's buckets)
    "aten::result_type", "aten::unflatten_dense_tensors",
})
# The autograd nodes of those views: their backward is another view of the gradient.
VIEW_BACKWARD_NODES = frozenset({
    "TBackward", "ViewBackward", "UnsafeViewBackward", "ReshapeAliasBackward",
    "PermuteBackward", "TransposeBackward", "SqueezeBackward", "UnsqueezeBackward",
    "AliasBackward", "DetachBackward",
})
_EVALUATE = "autograd::engine::evaluate_function: "


def launches_nothing(name: str) -> bool:
    """An operator, or the autograd node of one (``TBackward0``, also as
    ``autograd::engine::evaluate_function: TBackward0``), that launches no device work on
    any device (NO_DEVICE_WORK_OPS, VIEW_BACKWARD_NODES)."""
    if name in NO_DEVICE_WORK_OPS:
        return True
    node = name.removeprefix(_EVALUATE).rstrip("0123456789")
    return node in VIEW_BACKWARD_NODES
# Calls that block the host until the device catches up.
SYNC_CALLS = frozenset(
    {
        "cudaDeviceSynchronize",
        "cudaStreamSynchronize",
        "cudaEventSynchronize",
        "cudaMemcpy",
        "cudaStreamWaitEvent_blocking",
        "cuStreamSynchronize",
        "cuCtxSynchronize",
        "hipDeviceSynchronize",
        "hipStreamSynchronize",
        "hipEventSynchronize",
        "hipMemcpy",
        "hipMemcpyWithStream",
    }
)


def is_launch_call(name: str) -> bool:
    """Runtime calls that launch device work (MTIA's carry a suffix: 'runFunction - ...')."""
    return name in LAUNCH_CALLS or name in COPY_CALLS or name.startswith("runFunction")


def is_profiler_step(name: str) -> bool:
    return name.startswith("ProfilerStep#")


def is_dataloader(name: str) -> bool:
    return (name.startswith("enumerate(DataLoader)#") and name.endswith(".__next__")) or (
        name.startswith("enumerate(DataPipe)#")
    )


def is_optimizer(name: str) -> bool:
    return name.startswith("Optimizer.")


# PyTorch's loss functions as the dispatcher records them (torch.nn.functional's losses:
# cross_entropy calls cross_entropy_loss -> log_softmax + nll_loss, …). A loss with no
# backward pass in the trace is a validation loop, or a window that cut a training step
# before its backward: either way not known to be inference (Context.premises).
LOSS_OPS = frozenset(
    f"aten::{n}" for n in (
        "cross_entropy_loss", "nll_loss", "nll_loss_nd", "nll_loss_forward", "nll_loss2d",
        "nll_loss2d_forward", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
        "binary_cross_entropy", "binary_cross_entropy_with_logits", "kl_div", "ctc_loss",
        "margin_ranking_loss", "multi_margin_loss", "multilabel_margin_loss",
        "multilabel_margin_loss_forward", "soft_margin_loss", "hinge_embedding_loss",
        "cosine_embedding_loss", "triplet_margin_loss", "poisson_nll_loss",
    ))


def is_loss_op(name: str) -> bool:
    return name in LOSS_OPS


def is_optimizer_step(name: str) -> bool:
    return name.startswith("Optimizer.step#")


def is_synchronize_call(name: str) -> bool:
    """An explicit synchronize (``cudaDeviceSynchronize``, ``hipStreamSynchronize``,
    ``cuCtxSynchronize``, …): a wait the caller asked for, unlike a blocking copy."""
    return name in SYNC_CALLS and name.endswith("Synchronize")


def is_aten_op(name: str) -> bool:
    """An ATen operator (``aten::mm``): the trace records PyTorch's operators."""
    return name.startswith("aten::")


def is_autograd_node(name: str) -> bool:
    """A backward node as the autograd engine records it
    (``autograd::engine::evaluate_function: MmBackward0``): the run has a backward pass."""
    return name.startswith(_EVALUATE)


def is_pageable_copy(name: str) -> bool:
    """Memcpys from or to pageable host memory: 'Memcpy HtoD (Pageable -> Device)', ..."""
    return "Pageable" in name or "pageable" in name


def is_dtoh_pageable(name: str) -> bool:
    """Device-to-pageable-host copies ('Memcpy DtoH (Device -> Pageable)'). CUDA's API
    synchronisation rules: such a cudaMemcpyAsync "will return only once the copy has
    completed", so the call waits for all work queued before it on its stream: it blocks
    like a synchronisation, whatever its name says."""
    return "DtoH" in name and is_pageable_copy(name)


def is_pinned_htod(name: str) -> bool:
    return "HtoD" in name and "ageable" not in name


def is_collective_host(name: str) -> bool:
    return bool(_COLLECTIVE_HOST.match(name) or _COLLECTIVE_MARKED.match(name))


def is_collective_kernel(name: str) -> bool:
    """Communication kernels: the table in stepscope.classify.communication."""
    return is_communication_kernel(name)


def is_tensor_core_kernel(name: str) -> bool:
    """Tensor Core / matrix-core kernels: the table in stepscope.classify.matrix_cores."""
    return is_matrix_core_kernel(name)


def is_gemm_or_conv_kernel(name: str) -> bool:
    """GEMM/convolution kernels, on matrix cores or not (stepscope.classify.matrix_cores)."""
    return matrix_cores.is_gemm_or_conv_kernel(name)


# torch.compile leaves these in a trace: Dynamo's "Torch-Compiled Region: 0/0" range and
# "TorchDynamo Cache Lookup", AOTAutograd's "CompiledFunction"/"CompiledFunctionBackward"
# autograd nodes, Inductor's "## Call CompiledFxGraph <hash> ##" range; and the Triton
# kernels Inductor generates: triton_poi_ (pointwise), triton_red_/triton_per_ (reductions),
# triton_tem_ (templates).
_COMPILED_HOST = re.compile(r"^(Torch-Compiled Region|TorchDynamo Cache Lookup"
                            r"|CompiledFunction|## Call CompiledFxGraph)")
_INDUCTOR_KERNEL = re.compile(r"^triton_(poi|red|per|tem)_")


def is_compiled_marker(name: str) -> bool:
    """A host range torch.compile (Dynamo, AOTAutograd, Inductor) records."""
    return _COMPILED_HOST.match(name) is not None


# Host ranges that are a JIT compilation: paid once per graph, fusion or input shape (the
# result is cached), so time under them is warm-up, not steady-state host work to move off
# the critical path.
# - torch.compile: `dynamo_timed` (torch/_dynamo/utils.py) records every compile phase
#   (Dynamo's tracing, AOTAutograd, Inductor's lowering, codegen and autotuning) as a
#   profiler range "<phase> (dynamo_timed)" (PyTorch 2.1 through 2.13).
# - nvFuser: its FUSER_PERF_SCOPE ranges (NVTX under nsys, record_function under Kineto)
#   name the compile steps with a C++ scope that starts "compile"/"Compile"
#   (KernelExecutor::compile, FusionKernelRuntime::compileFusionParallel,
#   FusionExecutorCache::getKernelRuntimeFor::compileNewKRT, CompiledKernel::compile) and
#   NVRTC's run (executor_utils::NVRTC, executor_utils::Nvrtc::CompileProgram).
# - NVRTC's own API call, nvrtcCompileProgram, where a tool traces it.
_JIT_COMPILE = re.compile(r" \(dynamo_timed\)$|::[Cc]ompile|::NVRTC$|^nvrtcCompileProgram$")


def is_jit_compile(name: str) -> bool:
    """A host range that is a JIT compilation (torch.compile, nvFuser, NVRTC)."""
    return _JIT_COMPILE.search(name) is not None


# vLLM registers its custom operators in the "vllm" torch library namespace
# (torch.ops.vllm.unified_attention_with_output, vllm::moe_forward, vllm::all_reduce, ...);
# the profiler records each call as a host operator "vllm::NAME". Such an operator means
# the model runs inside vLLM, which compiles it and captures CUDA/HIP graphs itself
# (--enforce-eager / enforce_eager=True turns both off): a user does not wrap it in
# torch.compile or torch.cuda.graph.
_VLLM_OP = re.compile(r"^vllm::\w")


def is_vllm_op(name: str) -> bool:
    """A vLLM custom operator (``vllm::…``)."""
    return _VLLM_OP.match(name) is not None


def is_inductor_kernel(name: str) -> bool:
    """A Triton kernel TorchInductor generated (triton_poi_/red_/per_/tem_*)."""
    return _INDUCTOR_KERNEL.match(name) is not None


_TF32 = re.compile(r"(?i)[tx]f32")


def says_tf32(name: str) -> bool:
    """The kernel name says its math runs in TF32 (cuBLAS/cuDNN xmma ``*_tf32f32_*``,
    CUTLASS ``*tf32*``) or AMD's XF32 (hipBLASLt/Tensile ``*XF32*``)."""
    return _TF32.search(name) is not None


def is_memory_op_name(name: str) -> bool:
    return name.startswith(("Memcpy", "Memset", "dma"))


def mask(trace: Trace, predicate: Callable[[str], object]) -> npt.NDArray[np.bool_]:
    """Boolean mask over the string table (index it with a name column); memoised."""
    return trace.string_ids(predicate)


def mask_in(trace: Trace, names: frozenset[str]) -> npt.NDArray[np.bool_]:
    return mask(trace, names.__contains__)
