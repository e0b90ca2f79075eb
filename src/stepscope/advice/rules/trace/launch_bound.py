"""Rule 6: launch-bound execution: many short kernels, the GPU waits for launches."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.classify import names

SHORT_SHARE = 0.5  # of launches are "short" (HTA: cpu <= 50 µs and gpu < cpu)
THRESHOLD_PCT = 5.0  # host-wait GPU idle, % of the step
QUEUED_DELAY_NS = 50_000  # median launch delay up to this: kernels start right after launch

CODE = """\
model = torch.compile(model, mode="reduce-overhead")   # captures CUDA graphs
# or capture a static step by hand:
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_loss = train_step(static_x, static_y)
for x, y in loader:
    static_x.copy_(x); static_y.copy_(y)
    g.replay()"""


def check(ctx: Context) -> Finding | None:
    la = ctx.a.launches
    if not ctx.has_gpu or la is None or la.launches == 0:
        return None
    if la.short_kernels < SHORT_SHARE * la.launches:
        return None
    gaps = ctx.gaps
    hw = gaps.length[gaps.host_wait]
    host_wait_ns = float(hw.sum()) / ctx.n_steps
    if ctx.pct(host_wait_ns) < THRESHOLD_PCT:
        return None
    rt = ctx.trace.runtime
    launch = names.mask_in(ctx.trace, names.LAUNCH_CALLS)[rt.name]
    launch_ns = ctx.per_step_union(rt.ts[launch], rt.end[launch])
    saving = min(host_wait_ns, max(launch_ns, 0.0)) if launch_ns > 0 else 0.0
    n_launch = int(np.count_nonzero(ctx.in_steps(rt.ts[launch], rt.end[launch]) > 0))
    evidence = [
        f"{la.short_kernels:,} of {la.launches:,} launches "
        f"({100 * la.short_kernels / la.launches:.0f} %)"
        " are short: the kernel runs for less time than its launch call takes",
        f"{n_launch / ctx.n_steps:,.0f} kernel launches per step, {fmt_ns(launch_ns)} of CPU time "
        "per step in launch calls",
        f"the GPU idles {fmt_ns(host_wait_ns)} per step waiting for the next launch "
        f"({len(hw) / ctx.n_steps:,.0f} gaps per step, median {fmt_ns(float(np.median(hw)))})"
        if len(hw) else "no host-wait gaps",
    ]
    # A short launch delay supports the claim (kernels start as soon as they are queued: the
    # GPU was waiting); a long one means a queue of work ahead, the opposite, so it is not shown.
    if la.delay_p50_ns <= QUEUED_DELAY_NS:
        evidence.append(f"median launch delay {fmt_ns(la.delay_p50_ns)}: kernels start as soon "
                        "as they are launched, the GPU has nothing queued")
    if ctx.a.clock_skew is not None:
        evidence.append(f"affected by clock skew: kernels start up to "
                        f"{fmt_ns(ctx.a.clock_skew.max_ns)} before their launch call returns, "
                        "so launch delays and host-wait gaps are uncertain by that much")
    g = ctx.a.graphs
    fix = ("Launch fewer, larger kernels: torch.compile(mode=\"reduce-overhead\") (fusion + "
           "CUDA graphs), CUDA graphs for static shapes, or a larger batch to give each kernel "
           "more work.")
    if g is not None and g.graph_launches:
        evidence.append(f"CUDA/HIP graphs are already used: {g.graph_launches:,} graph launches, "
                        f"{g.kernels_per_graph:,.1f} kernels per graph; the short launches are "
                        "outside the graphs")
        fix = ("Graphs are already used: capture more of the step in them (the eager launches "
               "outside the graphs are what waits), fuse the remaining small kernels with "
               "torch.compile, or give each kernel more work with a larger batch.")
    return ctx.finding(
        id="launch-bound", title="Launch-bound: many short kernels, the GPU waits for the CPU",
        saving_ns=saving,
        estimate=("GPU idle time per step where the next kernel was launched only after the GPU "
                  "went idle, capped by the CPU time spent in launch calls (what a CUDA graph "
                  "replaces with one launch)."),
        evidence=evidence,
        fix=fix,
        code=CODE,
        references=("https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs",
                    "https://pytorch.org/docs/stable/generated/torch.compile.html"),
    )
