"""Rule 11: host-to-device copies (already pinned) that do not overlap compute."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.classify import names
from stepscope.model.trace import DEV_MEMCPY

THRESHOLD_PCT = 1.0  # non-overlapped HtoD copy time, % of the step


CODE = """\
copy_stream = torch.cuda.Stream()
def prefetch(batch):
    with torch.cuda.stream(copy_stream):
        return [t.to(device, non_blocking=True) for t in batch]   # from pinned memory
it = iter(loader); nxt = prefetch(next(it))
for batch in it:
    torch.cuda.current_stream().wait_stream(copy_stream)
    x, y = nxt
    for t in (x, y): t.record_stream(torch.cuda.current_stream())
    nxt = prefetch(batch)          # copy of the next batch overlaps this step's compute
    step(x, y)                     # the training or inference step"""


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    dev = ctx.trace.device
    pinned_htod = names.mask(ctx.trace, names.is_pinned_htod)[dev.name]
    sel = ctx.device_sel & (dev.kind == DEV_MEMCPY) & pinned_htod
    if not sel.any():
        return None
    copies = ctx.device_union(sel)
    exposed = iv.length(iv.subtract(copies, ctx.kernel_busy)) / ctx.n_steps
    if ctx.pct(exposed) < THRESHOLD_PCT:
        return None
    total = iv.length(copies) / ctx.n_steps
    streams = sorted(set(dev.stream[sel].tolist()))
    kstreams = sorted(set(dev.stream[ctx.kernel_sel].tolist()))
    same = bool(set(streams) & set(kstreams))
    return ctx.finding(
        id="h2d-not-overlapped", title="Host-to-device copies do not overlap compute",
        saving_ns=exposed,
        estimate=("HtoD copy time per step during which no kernel runs: a copy on a side stream "
                  "issued a step ahead overlaps with compute completely."),
        evidence=[
            f"{fmt_ns(total)} of HtoD copies per step, "
            f"{fmt_ns(exposed)} of it with no kernel running",
            f"copies on stream(s) {streams}; kernels on {kstreams[:6]}"
            + (" — copies share the compute stream" if same else ""),
            f"{int(np.count_nonzero(sel & (ctx.device_in_steps > 0))) / ctx.n_steps:.1f} "
            "HtoD copies per step",
        ],
        fix=("Prefetch the next batch to the GPU on a side stream while the current step "
             "computes (pinned memory + non_blocking=True), or move the data to the GPU once."),
        code=CODE,
        references=("https://pytorch.org/docs/stable/notes/cuda.html#cuda-streams",
                    "https://pytorch.org/tutorials/intermediate/pinmem_nonblock.html"),
    )
