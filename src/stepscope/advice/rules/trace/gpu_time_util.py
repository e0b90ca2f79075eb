"""nsys analyze's gpu_time_util: windows of the GPU's active span with low time in use.

The main GPU's span inside the steps is cut into ``CHUNKS`` equal windows; windows less
than ``UTIL_PCT`` % in use (any kernel, memcpy or memset running) are reported. Time in use
is not SM occupancy: a busy GPU can still run kernels that use few SMs. The idle time of
gaps of 1 ms or more is the ``gpu-gaps`` finding and is not counted again here.
"""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.advice.rules.trace.gpu_gaps import GAP_NS
from stepscope.analysis.events import intervals as iv

CHUNKS = 30
UTIL_PCT = 50.0
THRESHOLD_PCT = 3.0


def _fix(ctx: Context) -> str:
    """Batching small kernels: only the means the run does not use yet."""
    p = ctx.premises
    options = [("torch.compile", p.compiled is not None)]
    if p.graph_api:
        options.append((p.graphs, p.graph_launches > 0))
    means = [m for m, used in options if not used]
    done = " and ".join(m for m, _ in options)
    batch = f"batch small kernels ({', '.join(means)}), " if means else (
        f"the run already uses {done}: look at what runs outside them, ")
    return (f"Feed the GPU faster in those windows: {batch}remove host work between launches, "
            "overlap copies with compute.")


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    busy = ctx.busy
    if not len(busy[0]):
        return None
    lo, hi = int(busy[0][0]), int(busy[1][-1])
    if hi - lo < CHUNKS:
        return None
    edges = np.linspace(lo, hi, CHUNKS + 1).astype(np.int64)
    size = np.maximum(np.diff(edges), 1)
    in_use = iv.measure_in(busy, edges[:-1], edges[1:]) / size
    low = in_use * 100 < UTIL_PCT
    if not low.any():
        return None
    windows = iv.union(edges[:-1][low], edges[1:][low])
    idle_low = iv.subtract(iv.intersect(windows, ctx.window), busy)
    gaps = ctx.gaps
    big = gaps.length >= GAP_NS
    if big.any():
        g = iv.union(gaps.start[big], gaps.start[big] + gaps.length[big])
        idle_low = iv.subtract(idle_low, g)
    saving = iv.length(idle_low) / ctx.n_steps
    if ctx.pct(saving) < THRESHOLD_PCT:
        return None
    worst = np.argsort(in_use, kind="stable")[:3]
    evidence = [
        f"{int(low.sum())} of {CHUNKS} equal windows of the GPU's active span "
        f"({fmt_ns((hi - lo) / CHUNKS)} each) are < {UTIL_PCT:.0f} % in use",
        f"{fmt_ns(saving)} per step of idle time in those windows lies in gaps shorter than "
        f"{GAP_NS / 1e6:.0f} ms (many small gaps: launch overhead, small kernels, host work)",
    ] + [f"window {int(i) + 1}: {100 * float(in_use[i]):.0f} % in use" for i in worst.tolist()]
    return ctx.finding(
        id="gpu-low-utilization", title="Long stretches with the GPU mostly idle",
        saving_ns=saving,
        estimate=(f"Idle time per step inside the windows below {UTIL_PCT:.0f} % time in use, "
                  f"outside gaps ≥ {GAP_NS / 1e6:.0f} ms (their own finding)."),
        evidence=evidence,
        fix=_fix(ctx),
        # Nsight Systems' expert rule is the source of this heuristic, but it reads only
        # NVIDIA runs: elsewhere HTA's temporal breakdown (Kineto traces of any vendor)
        references=(("https://docs.nvidia.com/nsight-systems/UserGuide/index.html"
                     "#gpu-low-utilization",) if ctx.premises.vendor == "nvidia" else
                    ("https://hta.readthedocs.io/en/latest/source/features/"
                     "temporal_breakdown.html",)),
    )
