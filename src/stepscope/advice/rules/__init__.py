"""The registry of advisor rules, in documentation order (docs/advice.md)."""

from __future__ import annotations

from collections.abc import Callable

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding
from stepscope.advice.rules.distributed import (
    expert_imbalance,
    exposed_comm,
    fsdp_prefetch,
    pipeline,
    rank_imbalance,
    rank_overlap,
    straggler,
)
from stepscope.advice.rules.efficiency import low_mfu, matmul_alignment, occupancy, tensor_cores
from stepscope.advice.rules.memory import capacity as memory_capacity
from stepscope.advice.rules.memory import fragmentation as memory_fragmentation
from stepscope.advice.rules.memory import growth as memory_growth
from stepscope.advice.rules.tensorrt import enqueue as trt_enqueue
from stepscope.advice.rules.tensorrt import precision as trt_precision
from stepscope.advice.rules.tensorrt import reformat as trt_reformat
from stepscope.advice.rules.tensorrt import small_batch as trt_small_batch
from stepscope.advice.rules.tensorrt import transfers as trt_transfers
from stepscope.advice.rules.tensorrt import unstable as trt_unstable
from stepscope.advice.rules.tensorrt.context import TrtContext
from stepscope.advice.rules.trace import (
    batch_size,
    casts,
    copies,
    cpu_ops,
    dataloader,
    elementwise,
    gpu_gaps,
    gpu_time_util,
    launch_bound,
    module_hotspot,
    optimizer,
    sync,
    warmup,
)
from stepscope.advice.rules.transfers import (
    h2d_overlap,
    memcpy_async_pageable,
    memcpy_sync,
    memset_sync,
    pageable,
)
from stepscope.analysis.distributed.run import Distributed

RuleFn = Callable[[Context], "Finding | list[Finding] | None"]

RULES: dict[str, RuleFn] = {
    "input-pipeline": dataloader.check,
    "small-batch": batch_size.check,
    "tensor-cores": tensor_cores.check,
    "host-sync": sync.check,
    "pageable-memcpy": pageable.check,
    "launch-bound": launch_bound.check,
    "materialising-copies": copies.check,
    "autocast-casts": casts.check,
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

# TensorRT (trtexec) runs: rules over stepscope.analysis.tensorrt.engine.TrtAnalysis.
TrtRuleFn = Callable[[TrtContext], "Finding | None"]

TRT_RULES: dict[str, TrtRuleFn] = {
    "trt-reformat": trt_reformat.check,
    "trt-precision": trt_precision.check,
    "trt-enqueue-bound": trt_enqueue.check,
    "trt-transfer-bound": trt_transfers.check,
    "trt-unstable-timings": trt_unstable.check,
    "trt-small-batch": trt_small_batch.check,
}

# Multi-rank rules: they read a run's distributed view (analysis.distributed), not one trace.
RunRuleFn = Callable[[Distributed], "Finding | None"]

RUN_RULES: dict[str, RunRuleFn] = {
    "straggler": straggler.check_run,
    "low-comm-overlap": rank_overlap.check_run,
    "rank-imbalance": rank_imbalance.check_run,
    "expert-imbalance": expert_imbalance.check_run,
    "fsdp-exposed-all-gather": fsdp_prefetch.check_run,
    "pipeline-bubble": pipeline.check_run,
}
