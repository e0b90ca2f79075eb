"""Rule 6: launch-bound execution: many short kernels, the GPU waits for launches.

Launch-bound means the GPU runs out of queued work between kernels and waits for the CPU to
issue the next launch. Two things in the trace show it, both measured over the steps:
most launches are short (HTA: the call takes <= 50 µs and the work it launches runs for less
than the call), and the GPU idles in short gaps that end with a kernel launched after the
gap began and started as soon as its launch call returned. A long launch delay (a deep
queue of launched, not yet started work) is the opposite: the rule stays silent.
"""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.advice.rules.trace.gpu_gaps import GAP_NS
from stepscope.analysis.events.links import gather
from stepscope.analysis.trace.launches import RUNTIME_CUTOFF_NS
from stepscope.classify import names

SHORT_SHARE = 0.5  # of launches in the steps are "short" (HTA: cpu <= 50 µs and gpu < cpu)
THRESHOLD_PCT = 5.0  # launch-wait GPU idle, % of the step
# A kernel that starts within 50 µs of its launch call returning had nothing (at most a few
# launches' worth: one launch costs ~5-10 µs of CPU) queued ahead of it. The median over the
# steps' launches above this means the GPU has work waiting: not launch-bound.
QUEUED_DELAY_NS = 50_000
LAUNCH_STALL_NS = 1_000_000  # a launch call this long is not launch overhead
VLLM_REFERENCES = ("https://docs.vllm.ai/en/latest/design/cuda_graphs/",
                   "https://docs.vllm.ai/en/latest/design/debug_vllm_compile/")

CODE = """\
model = torch.compile(model, mode="reduce-overhead")   # captures {graphs}
# or capture a static step by hand (warm it up on a side stream first):
g = torch.cuda.CUDAGraph()
with torch.cuda.graph(g):
    static_loss = train_step(static_x, static_y)
for x, y in loader:
    static_x.copy_(x); static_y.copy_(y)
    g.replay()"""
# inference (Premises.inference): the forward pass is what is captured
CODE_INFERENCE = """\
model = torch.compile(model, mode="reduce-overhead")   # captures {graphs}
# or capture the forward pass by hand (warm it up on a side stream first):
g = torch.cuda.CUDAGraph()
with torch.inference_mode(), torch.cuda.graph(g):
    static_out = model(static_x)
for x in inputs:
    static_x.copy_(x)
    g.replay()                      # static_out now holds the result"""


def _fix(ctx: Context) -> str:
    """The means of launching less that the run does not use yet, in its vendor's words
    (torch.cuda.graph captures HIP graphs on ROCm)."""
    p = ctx.premises
    if p.vllm is not None and p.graph_api:
        return (f"Launch fewer kernels: the run serves with vLLM ({p.vllm}) and launches every "
                f"kernel eagerly. vLLM replays {p.graphs} itself unless they are turned off "
                "(--enforce-eager / enforce_eager=True, or -O.cudagraph_mode=NONE) or a batch "
                "has more tokens than its largest capture size (cudagraph_capture_sizes in "
                f"its compilation config): turn them on, or capture the batch sizes this run "
                "serves.")
    if not p.graph_api:
        return ("Launch fewer, larger kernels: fuse them (torch.compile"
                + (", already used: look at what runs outside it" if p.compiled else "")
                + ") or give each kernel more work with a larger batch.")
    if p.compiled is not None:
        return (f"Launch fewer, larger kernels: the run is already compiled ({p.compiled}) but "
                f"launches each kernel eagerly: compile with mode=\"reduce-overhead\" to "
                f"replay {p.graphs}, capture static parts of the step in {p.graphs} by hand, "
                "or a larger batch to give each kernel more work.")
    return ("Launch fewer, larger kernels: torch.compile(mode=\"reduce-overhead\") (fusion + "
            f"{p.graphs}), {p.graphs} for static shapes, or a larger batch to give each "
            "kernel more work.")


def _code(ctx: Context) -> str | None:
    """The graph snippet for the run (a forward pass for inference); none for vLLM (its own
    switches) or a device without a graph API PyTorch exposes (graph_api: fusion only)."""
    p = ctx.premises
    if p.vllm is not None:
        return None
    if not p.graph_api:
        return None if p.compiled else "model = torch.compile(model)   # fewer, fused kernels"
    return (CODE_INFERENCE if p.inference else CODE).format(graphs=p.graphs)


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    trace = ctx.trace
    rt, dev = trace.runtime, trace.device
    dev_rt = ctx.a.links.device_runtime
    # launch calls in the steps (call start inside them) with work on the main GPU
    on_main = ctx.device_sel & (dev_rt >= 0)
    n_rt = len(rt)
    first = np.full(n_rt, np.iinfo(np.int64).max)
    np.minimum.at(first, dev_rt[on_main], dev.ts[on_main])
    gpu = np.bincount(dev_rt[on_main], weights=dev.dur[on_main].astype(np.float64),
                      minlength=n_rt)
    is_launch = names.mask(trace, names.is_launch_call)[rt.name]
    sel = np.flatnonzero(is_launch & (first < np.iinfo(np.int64).max))
    sel = sel[ctx.in_steps(rt.ts[sel], rt.ts[sel] + 1) > 0]
    if len(sel) == 0:
        return None
    cpu = rt.dur[sel]
    short = (cpu <= RUNTIME_CUTOFF_NS) & (gpu[sel] < cpu)
    n_short = int(short.sum())
    if n_short < SHORT_SHARE * len(sel):
        return None
    delay = np.maximum(first[sel] - rt.end[sel], 0)
    delay_p50 = float(np.median(delay))
    if delay_p50 > QUEUED_DELAY_NS:
        return None  # work is queued ahead of the GPU: it does not wait for launches
    # gaps the GPU spent waiting for a launch: short, ended by work launched after the gap
    # began that started as soon as its launch call returned
    gaps = ctx.gaps
    ends = gather(rt.end, dev_rt[gaps.after], -1)
    after_delay = np.where(ends >= 0, np.maximum(dev.ts[gaps.after] - ends, 0), GAP_NS)
    wait = gaps.host_wait & (gaps.length < GAP_NS) & (after_delay <= QUEUED_DELAY_NS)
    hw = gaps.length[wait]
    host_wait_ns = float(hw.sum()) / ctx.n_steps
    if ctx.pct(host_wait_ns) < THRESHOLD_PCT:
        return None
    launch = names.mask_in(trace, names.LAUNCH_CALLS)[rt.name]
    # what a graph replaces is the per-launch cost (5-10 µs); a launch call of 1 ms or more
    # is a lazy module load on first launch or a full launch queue, which a graph does not
    # remove: it is left out of the cap and stated
    stall = launch & (rt.dur >= LAUNCH_STALL_NS)
    stall_ns = ctx.per_step_union(rt.ts[stall], rt.end[stall])
    n_launch = int(np.count_nonzero(ctx.in_steps(rt.ts[launch], rt.end[launch]) > 0))
    launch &= ~stall
    launch_ns = ctx.per_step_union(rt.ts[launch], rt.end[launch])
    saving = min(host_wait_ns, max(launch_ns, 0.0)) if launch_ns > 0 else 0.0
    evidence = [
        f"{n_short:,} of {len(sel):,} launches in the steps ({100 * n_short / len(sel):.0f} %)"
        " are short: the call takes ≤ 50 µs and the work it launches runs for less time",
        f"{n_launch / ctx.n_steps:,.0f} kernel launches per step, {fmt_ns(launch_ns)} of CPU time "
        "per step in launch calls"
        + (f" (not counting {fmt_ns(stall_ns)} per step in launch calls of 1 ms or more: a "
           "module loaded on first launch or a full launch queue)" if stall_ns > 0 else ""),
        f"the GPU idles {fmt_ns(host_wait_ns)} per step waiting for the next launch: "
        f"{len(hw) / ctx.n_steps:,.0f} gaps per step shorter than {GAP_NS / 1e6:.0f} ms "
        f"(median {fmt_ns(float(np.median(hw)))}), each ended by a kernel launched after the "
        f"GPU went idle that started {fmt_ns(float(np.median(after_delay[wait])))} (median) "
        "after its launch call returned",
        f"median launch delay in the steps {fmt_ns(delay_p50)}: kernels start as soon as they "
        "are launched, the GPU has nothing queued",
    ]
    if ctx.a.clock_skew is not None:
        evidence.append(f"affected by clock skew: kernels start up to "
                        f"{fmt_ns(ctx.a.clock_skew.max_ns)} before their launch call returns, "
                        "so launch delays and host-wait gaps are uncertain by that much")
    g = ctx.a.graphs
    fix = _fix(ctx)
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
        estimate=("GPU idle time per step in gaps under 1 ms ended by a kernel launched after "
                  "the GPU went idle and started as soon as its launch returned, capped by the "
                  "CPU time spent in launch calls ("
                  + ("what a CUDA/HIP graph replaces with one launch)." if ctx.premises.graph_api
                     else "what fusing the kernels removes).")),
        evidence=evidence,
        fix=fix,
        code=_code(ctx),
        references=(VLLM_REFERENCES if ctx.premises.vllm is not None else
                    ("https://pytorch.org/docs/stable/notes/cuda.html#cuda-graphs",
                     "https://pytorch.org/docs/stable/generated/torch.compile.html")
                    if ctx.premises.graph_api else
                    ("https://pytorch.org/docs/stable/generated/torch.compile.html",)),
    )
