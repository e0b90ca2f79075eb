"""The registry of advisor rules, in documentation order (docs/advice.md)."""

from __future__ import annotations

from collections.abc import Callable

from ..context import Context
from ..finding import Finding
from . import (
    batch_size,
    copies,
    cpu_ops,
    dataloader,
    elementwise,
    gpu_gaps,
    gpu_time_util,
    h2d_overlap,
    launch_bound,
    memcpy_async_pageable,
    memcpy_sync,
    memset_sync,
    occupancy,
    optimizer,
    pageable,
    sync,
    tensor_cores,
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
    "async-memcpy-pageable": memcpy_async_pageable.check,
    "sync-memcpy": memcpy_sync.check,
    "sync-memset": memset_sync.check,
    "gpu-low-utilization": gpu_time_util.check,
}
