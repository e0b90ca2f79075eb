"""Rule 10: GPU idle gaps and windows of low GPU time utilisation (nsys analyze's
gpu_gaps and gpu_time_util rules), with what the CPU was doing during the largest gaps."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns, short
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.warmup import FIRST_CALL_RATIO
from stepscope.classify import names
from stepscope.model.trace import HOST_PYTHON

GAP_NS = 1_000_000  # gaps of 1 ms or more (nsys: 500 ms default, too coarse for training)
CHUNKS = 30  # gpu_time_util: the GPU's active span cut into 30 windows
UTIL_PCT = 50.0  # windows below 50 % in use
THRESHOLD_PCT = 5.0  # unexplained gap time, % of the step
BLIND_SHARE = 0.5  # nothing recorded in half the counted gap time: say how to record it


# How to record the host where the trace shows nothing (copy-paste safe: one command per
# comment line, within 80 columns once indented)
CODE_RECORD_NSYS = """\
# run: nsys profile --sample=cpu --trace=cuda,nvtx,osrt python train.py
with torch.cuda.nvtx.range("load batch"):      # name your own phases
    batch = next(it)"""
CODE_RECORD_KINETO = """\
with torch.profiler.profile(with_stack=True) as prof:     # Python frames
    with torch.profiler.record_function("load batch"):   # name your own phases
        batch = next(it)"""


def _record_more(fmt: str, blind_ns: float, unexplained_ns: float) -> tuple[str, str]:
    """The fix's sentence and the snippet, when the trace shows nothing for the gaps."""
    return (f" The trace holds nothing on the host for {fmt_ns(blind_ns)} of the "
            f"{fmt_ns(unexplained_ns)} counted per step: record what runs there first "
            + ("(CPU sampling, OS runtime calls, NVTX ranges: below)." if fmt == "nsys" else
               "(Python frames and ranges around your own phases: below)."),
            CODE_RECORD_NSYS if fmt == "nsys" else CODE_RECORD_KINETO)


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu:
        return None
    trace, gaps = ctx.trace, ctx.gaps
    big = gaps.length >= GAP_NS
    if not big.any():
        return None
    g_start, g_len = gaps.start[big], gaps.length[big]
    gap_u = iv.union(g_start, g_start + g_len)
    # time explained by other rules (data loading, synchronisation) is not counted again
    host, rt = trace.host, trace.runtime
    loader, sync = ctx.loader_rows, ctx.sync_calls
    explained = iv.union(np.concatenate((host.ts[loader], rt.ts[sync])),
                         np.concatenate((host.end[loader], rt.end[sync])))
    not_step = ~names.mask(trace, names.is_profiler_step)[host.name]
    ops = np.flatnonzero((host.kind != HOST_PYTHON) & not_step)
    # JIT compilation and first calls or launches are warm-up, paid once: not host work to
    # move off the path
    compiling = iv.subtract(iv.intersect(gap_u, ctx.compile_time), explained)
    compile_ns = iv.length(compiling) / ctx.n_steps
    warm = iv.subtract(iv.subtract(iv.intersect(gap_u, ctx.first_call_time), explained),
                       compiling)
    warm_ns = iv.length(warm) / ctx.n_steps
    rest = iv.subtract(iv.subtract(iv.subtract(gap_u, explained), compiling), warm)
    unexplained = iv.length(rest) / ctx.n_steps
    if ctx.pct(unexplained) < THRESHOLD_PCT:
        return None
    busy = ctx.busy
    lo, hi = int(busy[0][0]), int(busy[1][-1])
    edges = np.linspace(lo, hi, CHUNKS + 1).astype(np.int64)
    in_use = iv.measure_in(busy, edges[:-1], edges[1:]) / np.maximum(np.diff(edges), 1)
    low = int(np.count_nonzero(in_use * 100 < UTIL_PCT))
    evidence = [
        f"{int(big.sum()) / ctx.n_steps:.1f} GPU idle gaps ≥ {GAP_NS / 1e6:.0f} ms per step, "
        f"{fmt_ns(float(g_len.sum()) / ctx.n_steps)} per step; {fmt_ns(unexplained)} of it is not "
        "data loading, synchronisation, compilation or first calls",
        f"{low} of {CHUNKS} equal windows of the GPU's active time are < {UTIL_PCT:.0f} % in use "
        f"(lowest {100 * float(in_use.min()):.0f} %)",
    ]
    if compile_ns > 0:
        evidence.append(
            f"{fmt_ns(compile_ns)} per step of the gaps is JIT compilation (torch.compile, "
            "nvFuser or NVRTC ranges), paid once per graph or shape, not counted")
    if warm_ns > 0:
        evidence.append(
            f"{fmt_ns(warm_ns)} per step of the gaps is the first call of an operator for its "
            "input shapes or the first launch of a kernel, "
            f"{FIRST_CALL_RATIO:.0f}× or more slower than the later ones (warm-up: cuDNN "
            "algorithm search, lazy module loading, compilation), not counted")
    # the largest gaps by their unexplained part (the time the saving counts)
    g_rest = iv.measure_in(rest, g_start, g_start + g_len)
    for j in np.argsort(-g_rest, kind="stable")[:3].tolist():
        s, e = int(g_start[j]), int(g_start[j] + g_len[j])
        ov = np.maximum(np.minimum(host.end[ops], e) - np.maximum(host.ts[ops], s), 0)
        # the outermost ranges covering most of the gap, then the deepest of those
        cand = ops[ov > 0]
        doing = "nothing recorded on the CPU meanwhile"
        in_rt = np.maximum(np.minimum(rt.end, e) - np.maximum(rt.ts, s), 0)
        if not len(cand) and len(in_rt) and in_rt.max() > 0:  # no range: the runtime calls
            k = int(np.argmax(in_rt))
            call = f"{short(trace.strings[rt.name[k]], 60)}"
            doing = (f"CPU in {call} ({fmt_ns(float(in_rt[k]))} of it)"
                     if 2 * in_rt[k] >= e - s else
                     "nothing recorded on the CPU for most of it (the longest call in it: "
                     f"{call}, {fmt_ns(float(in_rt[k]))})")
        if len(cand):
            ovc = ov[ov > 0]
            depth = ctx.a.tree.depth[cand]
            best = cand[np.lexsort((-depth, -ovc))][:1]
            outer = cand[depth == depth.min()]
            o = outer[np.argmax(ovc[depth == depth.min()])]
            doing = f"CPU in {short(trace.strings[host.name[o]], 60)}"
            if best[0] != o:
                doing += f" › {short(trace.strings[host.name[best[0]]], 60)}"
        counted = float(g_rest[j])
        part = f", {fmt_ns(counted)} of it counted" if counted < 0.95 * (e - s) else ""
        evidence.append(f"gap of {fmt_ns(e - s)}{part}: {doing}")
    # gap time in which the trace holds nothing on the host at all (no range of any kind, no
    # runtime or OS call): the finding cannot name the host work there, so the fix asks to
    # record it first instead of guessing
    nv, osrt = trace.nvtx, trace.osrt
    recorded = iv.union(np.concatenate((host.ts[not_step], rt.ts, nv.ts, osrt.ts)),
                        np.concatenate((host.end[not_step], rt.end, nv.ts + nv.dur,
                                        osrt.ts + osrt.dur)))
    blind_ns = iv.length(iv.subtract(rest, recorded)) / ctx.n_steps
    record = (_record_more(trace.meta.format, blind_ns, unexplained)
              if blind_ns >= BLIND_SHARE * unexplained else ("", ""))
    if ctx.a.clock_skew is not None:
        evidence.append(f"affected by clock skew (up to {fmt_ns(ctx.a.clock_skew.max_ns)}): "
                        "which gaps the host caused is uncertain by that much")
    return ctx.finding(
        id="gpu-gaps", title="The GPU sits idle in long gaps",
        saving_ns=unexplained,
        estimate=(f"Idle gaps ≥ {GAP_NS / 1e6:.0f} ms per step, minus the parts during data "
                  "loading or synchronising calls (their own findings) and warm-up (JIT "
                  "compilation, first calls): the GPU could at most do work in all of that "
                  "time."),
        evidence=evidence,
        fix=("Find what the CPU does in the largest gaps (above) and move it off the critical "
             "path: precompute it, run it on the GPU, overlap it with GPU work (launch the "
             "next step's work first), or run it in a background thread/process."
             + record[0]),
        code=record[1] or None,
        references=((("https://docs.nvidia.com/nsight-systems/UserGuide/index.html#gpu-gaps",)
                     if ctx.premises.vendor == "nvidia" else ())  # nsys reads NVIDIA runs only
                    + ("https://hta.readthedocs.io/en/latest/source/features/"
                       "idle_time_breakdown.html",)),
    )
