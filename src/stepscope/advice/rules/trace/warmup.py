"""Rule: a warm-up stall dominates the profiled window -> profile after warm-up."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.warmup import DOMINANT_PCT, FIRST_CALL_RATIO
from stepscope.model.trace import Trace
from stepscope.units import count

NOMINAL_PCT = 1.0

CODE = """\
with torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
    schedule=torch.profiler.schedule(wait=1, warmup=2, active=3, repeat=1),
    on_trace_ready=torch.profiler.tensorboard_trace_handler("./log"),
) as prof:
    for batch in loader:
        step(batch)                 # one training or inference step
        prof.step()"""

# nsys: capture only the iterations between cudaProfilerStart and cudaProfilerStop
CODE_NSYS = """\
# run: nsys profile --capture-range=cudaProfilerApi python train.py
for i, batch in enumerate(loader):
    if i == 5:                  # after compilation and warm-up
        torch.cuda.cudart().cudaProfilerStart()
    step(batch)
    if i == 10:
        torch.cuda.cudart().cudaProfilerStop()
        break"""


def check(ctx: Context) -> Finding | None:
    w = ctx.a.warmup
    if w is None or w.pct_of_window < DOMINANT_PCT:
        return _compiling(ctx) or _first_calls(ctx)
    evidence = [
        f"warm-up stall of {fmt_ns(w.duration)} at the start of the window "
        f"({w.pct_of_window:.0f} % of the {fmt_ns(w.window_ns)} profiled)",
        ("stalling calls: " if len(w.calls) > 1 else "stalling call: ")
        + f"{', '.join(w.calls[:3])} ({fmt_ns(w.stall_ns)} in total, "
        "GPU idle meanwhile)",
        "steady-state figures in this report exclude it"
        + ((" (steps " if len(w.dropped_steps) > 1 else " (step ")
           + f"{', '.join(w.dropped_steps)} dropped)" if w.dropped_steps else ""),
    ]
    return _nominal(
        ctx, "warm-up", paid=("warm-up is paid once (context creation, lazy module loading, "
                              "cuDNN benchmark, compilation)"),
        evidence=evidence,
        fix=("Skip the first iterations with the profiler schedule (wait/warmup), and run a "
             "few untimed steps before profiling; keep torch.backends.cudnn.benchmark only "
             "when input shapes are static."),
        code=CODE,
        references=("https://pytorch.org/docs/stable/profiler.html#torch.profiler.schedule",),
    )


def _compiling(ctx: Context) -> Finding | None:
    """A window that is mostly JIT compilation (names.is_jit_compile: torch.compile's
    dynamo_timed phases, nvFuser, NVRTC): the first call of a compiled model was profiled.
    Steady-state figures keep it (it is no runtime stall), so the finding says what share of
    the window it is; the other rules already leave compilation out."""
    trace, host = ctx.trace, ctx.trace.host
    rows = np.flatnonzero(ctx.compile_rows)
    if not len(rows):
        return None
    lo, hi = ctx.a.steps.window
    if hi <= lo:
        return None
    covered = iv.clip(ctx.compile_time, lo, hi)
    ns = iv.length(covered)
    pct = 100.0 * ns / (hi - lo)
    if pct < DOMINANT_PCT:
        return None
    outer = _outermost(trace, rows)
    nsys = trace.meta.format == "nsys"
    dynamo = any(trace.strings[int(k)].endswith(" (dynamo_timed)")
                 for k in np.unique(host.name[rows]).tolist())
    top = top_by_name(host.name[outer], host.dur[outer].astype(np.float64), trace.strings, 3)
    evidence = [
        f"JIT compilation runs {fmt_ns(ns)} of the {fmt_ns(hi - lo)} profiled "
        f"({pct:.0f} %): the profile measures the compiler, not the compiled model",
        "outermost compile ranges: " + ", ".join(f"{short(n, 60)} ({fmt_ns(d)})"
                                                 for n, d, _ in top),
    ]
    return _nominal(
        ctx, "compilation", paid=("compilation is paid once per graph or input shape (the "
                                  "result is cached)"),
        evidence=evidence,
        fix=("Run the compiled model on a few batches of the real shapes before profiling, "
             + ("and start the capture after them (nsys profile --capture-range=cudaProfilerApi, "
                "with cudaProfilerStart/Stop around the measured iterations)"
                if nsys else "or skip them with the profiler schedule's wait/warmup")
             + ", so that the window holds only compiled steps"
             + ("; mark dynamic dimensions (torch._dynamo.mark_dynamic) if shapes keep "
                "changing and recompiling." if dynamo else ".")),
        code=CODE_NSYS if nsys else CODE,
        references=(("https://docs.nvidia.com/nsight-systems/UserGuide/index.html"
                     "#cli-profile-command-switch-options",) if nsys else
                    ("https://pytorch.org/docs/stable/profiler.html#torch.profiler.schedule",))
        + (("https://pytorch.org/docs/stable/torch.compiler_troubleshooting.html",)
           if dynamo else ()),
    )


def _first_calls(ctx: Context) -> Finding | None:
    """A window that is mostly first calls and first launches (Context.first_call_rows and
    first_launch_rows: cuDNN's algorithm search, lazy module loading), none of them one
    stall long enough for analysis/events/warmup.py: the first iteration was profiled.
    Steady-state figures keep it, as they keep compilation; gpu-gaps and small-batch leave
    it out."""
    lo, hi = ctx.a.steps.window
    if hi <= lo:
        return None
    warm = iv.subtract(iv.clip(ctx.first_call_time, lo, hi), ctx.compile_time)
    ns = iv.length(warm)
    pct = 100.0 * ns / (hi - lo)
    if pct < DOMINANT_PCT:
        return None
    trace = ctx.trace
    host, rt = trace.host, trace.runtime
    calls, launches = ctx.first_call_rows, ctx.first_launch_rows
    evidence = [
        f"first calls and first launches run {fmt_ns(ns)} of the {fmt_ns(hi - lo)} profiled "
        f"({pct:.0f} %): each {FIRST_CALL_RATIO:.0f}× or more slower than the later calls of "
        "the same operator and shapes, or launches of the same kernel",
    ]
    if len(calls):
        inner = _innermost(calls, ctx.a.tree.parent)  # conv2d > ... > cudnn_convolution
        top = top_by_name(host.name[inner], host.dur[inner].astype(np.float64),
                          trace.strings, 3)
        evidence.append("slowest first calls: " + ", ".join(
            f"{short(n, 50)} ({fmt_ns(d)}" + (f", {c} shapes)" if c > 1 else ")")
            for n, d, c in top))
    if len(launches):
        n = len(launches)
        evidence.append(f"{count(n, 'first kernel launch', 'first kernel launches')} "
                        f"{'takes' if n == 1 else 'take'} "
                        f"{fmt_ns(float(rt.dur[launches].sum()))} (the kernel's module loaded "
                        "on its first launch)")
    evidence.append("the step time and its breakdown include it; gpu-gaps, small-batch and "
                    "cpu-ops-in-gpu-job leave it out")
    return _nominal(
        ctx, "first calls (warm-up)",
        paid=(("cuDNN's algorithm search, lazy module loading and one-time initialisation are "
               if ctx.has_gpu else  # a CPU profile: oneDNN builds its primitives on first use
               "one-time initialisation (oneDNN primitive creation, allocations) is ")
              + "paid on the first call of an operator for a shape"),
        evidence=evidence,
        fix=("Skip the first iterations with the profiler schedule (wait/warmup), or run a "
             "few untimed steps before profiling, so that the window holds steady-state steps"
             + ("; keep torch.backends.cudnn.benchmark only when input shapes are static."
                if ctx.has_gpu else ".")),
        code=CODE,
        references=("https://pytorch.org/docs/stable/profiler.html#torch.profiler.schedule",),
    )


def _innermost(rows: npt.NDArray[np.int64], parent: npt.NDArray[np.int64]
               ) -> npt.NDArray[np.int64]:
    """The rows of ``rows`` with no other row of ``rows`` below them in the call tree: the
    first call of aten::conv2d holds those of aten::convolution, ..., cudnn_convolution,
    and the innermost names where the time goes."""
    held: set[int] = set()
    for r in rows.tolist():
        p = int(parent[r])
        while p >= 0 and p not in held:  # each ancestor visited once
            held.add(p)
            p = int(parent[p])
    return rows[~np.isin(rows, np.fromiter(held, dtype=np.int64, count=len(held)))]


def _nominal(ctx: Context, what: str, *, paid: str, evidence: list[str], fix: str,
             code: str, references: tuple[str, ...]) -> Finding:
    """The finding, ranked low with a nominal saving: what dominates the window is paid
    once, not per step."""
    return ctx.finding(
        id="warmup-in-window",
        title=f"The profile is dominated by {what}: profile after it",
        saving_ns=ctx.step_ns * NOMINAL_PCT / 100.0,
        estimate=(f"Nominal {NOMINAL_PCT:g} % (to rank it low): {paid}, not per step; what "
                  "it costs is a profile that measures the wrong thing."),
        evidence=evidence, fix=fix, code=code, references=references)


def _outermost(trace: Trace, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The ranges of ``rows`` that no other range of ``rows`` on their thread contains."""
    host = trace.host
    keep: list[npt.NDArray[np.int64]] = []
    for tid in np.unique(host.tid[rows]).tolist():
        r = rows[host.tid[rows] == tid]
        r = r[np.lexsort((-host.end[r], host.ts[r]))]  # by start, the longer first
        reach = np.maximum.accumulate(host.end[r])
        keep.append(r[np.r_[True, host.end[r][1:] > reach[:-1]]])
    return np.concatenate(keep)
