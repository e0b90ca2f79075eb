"""Memory rule: the caching allocator holds much more than is allocated (fragmentation)."""

from __future__ import annotations

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding

MIN_PCT = 30.0  # reserved - allocated at the allocated peak, share of reserved
MIN_BYTES = 512 << 20


def check(ctx: Context) -> Finding | None:
    m = ctx.a.memory
    if m is None:
        return None
    best = None
    for d in m.devices:
        if d.cumulative or d.device == "CPU" or d.peak_reserved <= 0:
            continue
        idle = d.peak_reserved - d.peak_allocated
        pct = 100.0 * idle / d.peak_reserved
        if pct >= MIN_PCT and idle >= MIN_BYTES and (best is None or idle > best[1]):
            best = (d, idle, pct)
    if best is None:
        return None
    d, idle, pct = best
    gib = 1 << 30
    return Finding(
        id="allocator-fragmentation",
        # a trace shows reserved above the allocated peak, not why: fragmentation (blocks
        # that do not fit) is the likely cause, a memory snapshot shows it
        title=f"The caching allocator holds {idle / gib:.2f} GiB more than was ever allocated "
              f"at once ({pct:.0f} % of reserved)",
        saving_us=0.0, saving_pct=0.0, severity="medium",
        estimate=(f"Not a time saving: up to {idle / gib:.2f} GiB of reserved memory becomes "
                  "usable when blocks can grow in place instead of splitting segments (if "
                  "fragmentation is the cause: the snapshot tells)."),
        evidence=(f"{d.device}: peak allocated {d.peak_allocated / gib:.2f} GiB, reserved up "
                  f"to {d.peak_reserved / gib:.2f} GiB",),
        fix=("Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow instead of "
             "splitting); avoid allocations of ever-changing sizes (pad variable-length "
             "batches to a few bucket sizes). A memory snapshot (stepscope memory "
             "snapshot.pickle) shows the split blocks."),
        code="PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py",
        references=("https://pytorch.org/docs/stable/notes/cuda.html#memory-management",),
    )
