"""Findings from an allocator snapshot (``stepscope memory``): an out-of-memory moment and
fragmentation of the caching allocator. Memory findings save no step time: their saving
is 0 and they carry their own severity; the estimate states the memory effect."""

from __future__ import annotations

from stepscope.advice.finding import Finding
from stepscope.analysis.memory.snapshot import SnapshotResult

FRAG_PCT = 30.0
FRAG_MIN = 512 << 20
_GIB = float(1 << 30)


def _gib(n: float) -> str:
    return f"{n / _GIB:.2f} GiB"


def snapshot_findings(r: SnapshotResult) -> list[Finding]:
    out: list[Finding] = []
    for d in r.devices:
        if d.ooms:
            o = d.ooms[-1]
            sites = d.peak_sites or d.sites
            evidence = [f"GPU {d.device}: asked for {_gib(o.requested)} with "
                        f"{_gib(o.allocated)} allocated and {_gib(o.device_free)} free on the "
                        f"device; {_gib(d.reserved)} reserved, {_gib(d.inactive)} of it cached "
                        "but unused"]
            evidence += [f"{_gib(s.bytes)} live from {s.site}" for s in sites[:3]]
            out.append(Finding(
                id="out-of-memory", title=f"Out of memory on GPU {d.device} "
                                          f"(asked {_gib(o.requested)})",
                saving_us=0.0, saving_pct=0.0, severity="high",
                estimate=("Not a time saving: the allocation needs "
                          f"{_gib(max(o.requested - o.device_free, 0))} more than was free; "
                          "mixed precision roughly halves activations, checkpointing the "
                          "largest holders removes most of theirs, a halved micro-batch with "
                          "accumulation halves them."),
                evidence=tuple(evidence),
                fix=("Reduce the peak: torch.autocast (bf16/fp16), activation checkpointing of "
                     "the sites above (torch.utils.checkpoint), a smaller micro-batch with "
                     "gradient accumulation, optimizer-state sharding (FSDP / ZeRO); if much is "
                     "cached but unused, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True."),
                references=("https://pytorch.org/docs/stable/torch_cuda_memory.html",),
            ))
        if d.fragmentation_pct >= FRAG_PCT and d.inactive >= FRAG_MIN \
                and not d.expandable_segments:
            out.append(Finding(
                id="allocator-fragmentation",
                title=f"GPU {d.device}: {_gib(d.inactive)} reserved but unused "
                      f"({d.fragmentation_pct:.0f} % of reserved)",
                saving_us=0.0, saving_pct=0.0, severity="medium",
                estimate=(f"Not a time saving: up to {_gib(d.inactive)} become usable; "
                          f"{_gib(d.split_inactive_bytes)} sit in {d.split_inactive_blocks} "
                          "split blocks that cannot be returned."),
                evidence=(f"reserved {_gib(d.reserved)}, allocated {_gib(d.allocated)}, "
                          f"largest free block {_gib(d.largest_inactive_block)}",),
                fix="Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True; bucket variable "
                    "shapes.",
                code="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py",
            ))
    return out
