"""The one table from an advice rule to the transformation that models its fix
(docs/whatif.md "Rules and transforms"). Rules not listed cannot be modelled on the graph
(``gpu-gaps``: its fix removes host work between kernels, which the graph cannot shrink):
their saving stays the rule's own bound (``estimated_saving.method: "bound"``)."""

from __future__ import annotations

RULE_TRANSFORMS: dict[str, str] = {
    "input-pipeline": "drop_dataloader_wait",  # batches ready when the step asks
    "host-sync": "drop_sync",  # the synchronising calls removed
    "sync-memcpy": "drop_sync",  # blocking copies made asynchronous: the host no longer waits
    "pageable-memcpy": "async_h2d",  # pinned memory + non_blocking=True
    "async-memcpy-pageable": "async_h2d",
    "h2d-not-overlapped": "async_h2d",
    "launch-bound": "remove_launch_overhead",  # CUDA graphs
    "elementwise-dominated": "fuse_elementwise",
    "unfused-optimizer": "fuse_optimizer",  # foreach/fused: a few multi-tensor kernels
    "tensor-cores": "scale_kernels:tensor_cores",
    "exposed-communication": "overlap_comm",
}


def transform_for(rule_or_transform: str) -> str:
    """A rule id's transform, or the argument itself (a transform spec)."""
    return RULE_TRANSFORMS.get(rule_or_transform, rule_or_transform)
