"""Communication kernels: the documented table (one place, each pattern with its source).

A kernel is communication when its name matches one row. Rows are regular expressions
searched anywhere in the (demangled) kernel name, so ``void ns::kernel<...>(...)`` spellings
match too. Kernels launched by a host op the trace itself marks as a collective
(``nccl:*`` / ``c10d::*`` ops, ``record_param_comms`` with its process-group args) are
classified by ``analysis.names.is_collective_host`` through their launching op instead.
"""

from __future__ import annotations

import re
from typing import NamedTuple


class Pattern(NamedTuple):
    family: str
    regex: str
    source: str


COMMUNICATION_KERNELS: tuple[Pattern, ...] = (
    Pattern("NCCL", r"^(void )?nccl\w*(Kernel|kernel)",
            "NVIDIA/nccl src/device: ncclKernel_<Coll>_<Algo>_<Proto>_<Op>_<type>, "
            "ncclDevKernel_* (NCCL >= 2.19)"),
    Pattern("RCCL", r"^(void )?rccl\w*(Kernel|kernel)",
            "ROCm/rccl src/device (RCCL also keeps the nccl* names above)"),
    Pattern("MSCCL", r"^(void )?msccl\w*(Kernel|kernel)",
            "microsoft/msccl and RCCL's MSCCL executor: mscclKernel_<Op>_<type>_<proto>"),
    Pattern("MSCCL++", r"mscclpp::",
            "microsoft/mscclpp: kernels live in namespace mscclpp (allreduce*, allgather*)"),
    Pattern("NVSHMEM", r"nvshmem",
            "NVIDIA NVSHMEM: nvshmemi_*/nvshmemx_* collective and proxy kernels"),
    Pattern("DeepEP", r"deep_ep::|dpsk::ep",
            "deepseek-ai/DeepEP csrc/kernels: deep_ep::intranode/internode dispatch, combine, "
            "notify_dispatch (dpsk::ep in DeepSeek's internal builds)"),
    Pattern("PyTorch symmetric memory", r"multimem_\w+|(one|two)_shot_all_reduce",
            "pytorch torch/csrc/distributed/c10d/symm_mem/CUDASymmetricMemoryOps.cu: "
            "multimem_all_reduce_kernel, multimem_one_shot_all_reduce_kernel, "
            "one_shot_all_reduce_kernel, two_shot_all_reduce_kernel"),
    Pattern("vLLM/SGLang custom all-reduce", r"cross_device_reduce_\d?stage|quickreduce::",
            "vllm csrc/custom_all_reduce.cuh (cross_device_reduce_1stage/2stage, also in "
            "sgl-kernel), vllm csrc/quickreduce (ROCm quick all-reduce)"),
    Pattern("TensorRT-LLM/FlashInfer custom all-reduce",
            r"(one|two)Shot\w*AllReduce\w*Kernel|allreduce_fusion_kernel|lamport_\w*all_?reduce",
            "NVIDIA/TensorRT-LLM cpp/tensorrt_llm/kernels/customAllReduceKernels.cu and "
            "flashinfer comm/trtllm_allreduce_fusion (used by vLLM and SGLang)"),
)

_ANY = re.compile("|".join(f"(?:{p.regex})" for p in COMMUNICATION_KERNELS))
_EACH = tuple((p, re.compile(p.regex)) for p in COMMUNICATION_KERNELS)


def is_communication_kernel(name: str) -> bool:
    """True when the kernel name matches a row of COMMUNICATION_KERNELS."""
    return _ANY.search(name) is not None


def communication_family(name: str) -> str | None:
    """The family of the first matching row ("NCCL", "DeepEP", ...), or None."""
    for p, rx in _EACH:
        if rx.search(name):
            return p.family
    return None
