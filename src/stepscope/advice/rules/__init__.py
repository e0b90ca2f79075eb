"""The registry of advisor rules, in documentation order (docs/advice.md)."""

from __future__ import annotations

from collections.abc import Callable

from ..context import Context
from ..finding import Finding
from ..tensorrt_context import TrtContext
from . import (
    batch_size,
    copies,
    cpu_ops,
    dataloader,
    elementwise,
    exposed_comm,
    gpu_gaps,
    gpu_time_util,
    h2d_overlap,
    launch_bound,
    low_mfu,
    matmul_alignment,
    memcpy_async_pageable,
    memcpy_sync,
    memory_capacity,
    memory_fragmentation,
    memory_growth,
    memset_sync,
    module_hotspot,
    occupancy,
    optimizer,
    pageable,
    sync,
    tensor_cores,
    trt_enqueue,
    trt_precision,
    trt_reformat,
    trt_small_batch,
    trt_transfers,
    trt_unstable,
    warmup,
)

RuleFn = Callable[[Context], "Finding | list[Finding] | None"]

RULES: dict[str, RuleFn] = {
    "input-pipeline": dataloader.check,
    "small-batch": batch_size.check,
    "tensor-cores": tensor_cores.check,
    "host-sync": sync.check,
    "pageable-memcpy": pageable.check,
    "launch-bound": launch_bound.check,
    "materialising-copies": copies.check,
    "elementwise-dominated": elementwise.check,
    "unfused-optimizer": optimizer.check,
    "gpu-gaps": gpu_gaps.check,
    "h2d-not-overlapped": h2d_overlap.check,
    "cpu-ops-in-gpu-job": cpu_ops.check,
    "low-occupancy": occupancy.check,
    "memory-near-capacity": memory_capacity.check,
    "allocator-fragmentation": memory_fragmentation.check,
    "memory-growth": memory_growth.check,
    "dominant-module": module_hotspot.check,
    "low-mfu": low_mfu.check,
    "matmul-alignment": matmul_alignment.check,
    "exposed-communication": exposed_comm.check,
    "warmup-in-window": warmup.check,
    "async-memcpy-pageable": memcpy_async_pageable.check,
    "sync-memcpy": memcpy_sync.check,
    "sync-memset": memset_sync.check,
    "gpu-low-utilization": gpu_time_util.check,
}

# TensorRT (trtexec) runs: rules over stepscope.analysis.tensorrt.TrtAnalysis.
TrtRuleFn = Callable[[TrtContext], "Finding | None"]

TRT_RULES: dict[str, TrtRuleFn] = {
    "trt-reformat": trt_reformat.check,
    "trt-precision": trt_precision.check,
    "trt-enqueue-bound": trt_enqueue.check,
    "trt-transfer-bound": trt_transfers.check,
    "trt-unstable-timings": trt_unstable.check,
    "trt-small-batch": trt_small_batch.check,
}
