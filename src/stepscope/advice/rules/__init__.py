"""The registry of advisor rules, in documentation order (docs/advice.md)."""

from __future__ import annotations

from collections.abc import Callable

from stepscope.analysis.distributed import Distributed

from ..context import Context
from ..finding import Finding
from . import (
    batch_size,
    copies,
    cpu_ops,
    dataloader,
    elementwise,
    gpu_gaps,
    h2d_overlap,
    launch_bound,
    occupancy,
    optimizer,
    pageable,
    rank_imbalance,
    rank_overlap,
    straggler,
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
}

# Multi-rank rules: they read a run's distributed view (analysis.distributed), not one trace.
RunRuleFn = Callable[[Distributed], "Finding | None"]

RUN_RULES: dict[str, RunRuleFn] = {
    "straggler": straggler.check_run,
    "low-comm-overlap": rank_overlap.check_run,
    "rank-imbalance": rank_imbalance.check_run,
}
