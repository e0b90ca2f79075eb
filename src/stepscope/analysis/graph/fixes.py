"""The one table from an advice rule to the transformation that models its fix
(docs/whatif.md "Rules and transforms"). Rules not listed cannot be modelled on the graph
(``gpu-gaps``: its fix removes host work between kernels, which the graph cannot shrink):
their saving stays the rule's own bound (``estimated_saving.method: "bound"``).

A rule is listed only when its transform models the fix's main effect. The copy rules are not:
``pageable-memcpy`` and ``async-memcpy-pageable`` gain mostly from pinned memory's higher DMA
bandwidth (pageable copies are staged through a driver buffer), and ``h2d-not-overlapped``
from moving copies onto a side stream ahead of their consumer; the graph keeps every copy's
duration and stream order, so a replay would predict ~0 for a fix that works. They keep their
bounds; ``async_h2d`` stays available to ``stepscope whatif`` for the host-side part."""

from __future__ import annotations

RULE_TRANSFORMS: dict[str, str] = {
    "input-pipeline": "drop_dataloader_wait",  # batches ready when the step asks
    "host-sync": "drop_sync",  # the synchronising calls removed
    "sync-memcpy": "drop_sync",  # blocking copies made asynchronous: the host no longer waits
    "launch-bound": "remove_launch_overhead",  # CUDA graphs
    "elementwise-dominated": "fuse_elementwise",
    "unfused-optimizer": "fuse_optimizer",  # foreach/fused: a few multi-tensor kernels
    "tensor-cores": "scale_kernels:tensor_cores",
    "exposed-communication": "overlap_comm",
}


def transform_for(rule_or_transform: str) -> str:
    """A rule id's transform, or the argument itself (a transform spec)."""
    return RULE_TRANSFORMS.get(rule_or_transform, rule_or_transform)


# Transforms whose saving is the host running ahead into the NEXT step's work (a removed wait
# lets step k+1's launches queue behind step k's kernels). A replay of a single captured step
# has no next step to start earlier, so it would predict ~0 for a fix that works: with fewer
# than two windows such findings keep their bound.
NEEDS_NEXT_STEP: frozenset[str] = frozenset({"drop_sync"})

# Transforms that act on device work only (kernels, launches, collectives' streams). On a trace
# without GPU work the same rules describe host work (e.g. elementwise ops run as CPU
# operators), which these transforms do not touch: such findings keep their bound.
DEVICE_ONLY: frozenset[str] = frozenset({
    "remove_launch_overhead", "fuse_elementwise", "fuse_optimizer", "scale_kernels:tensor_cores",
    "overlap_comm"})
