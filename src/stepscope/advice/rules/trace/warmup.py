"""Rule: a warm-up stall dominates the profiled window -> profile after warm-up."""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.analysis.events.warmup import DOMINANT_PCT

NOMINAL_PCT = 1.0

CODE = """\
with torch.profiler.profile(
    activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
    schedule=torch.profiler.schedule(wait=1, warmup=2, active=3, repeat=1),
    on_trace_ready=torch.profiler.tensorboard_trace_handler("./log"),
) as prof:
    for x, y in loader:
        train_step(x, y)
        prof.step()"""


def check(ctx: Context) -> Finding | None:
    w = ctx.a.warmup
    if w is None or w.pct_of_window < DOMINANT_PCT:
        return None
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
    return ctx.finding(
        id="warmup-in-window",
        title="The profile is dominated by warm-up: profile after it",
        saving_ns=ctx.step_ns * NOMINAL_PCT / 100.0,
        estimate=(f"Nominal {NOMINAL_PCT:g} % (to rank it low): warm-up is paid once (context "
                  "creation, lazy module loading, cuDNN benchmark, compilation), not per step; "
                  "what it costs is a profile that measures the wrong thing."),
        evidence=evidence,
        fix=("Skip the first iterations with the profiler schedule (wait/warmup), and run a "
             "few untimed steps before profiling; keep torch.backends.cudnn.benchmark only "
             "when input shapes are static."),
        code=CODE,
        references=("https://pytorch.org/docs/stable/profiler.html#torch.profiler.schedule",),
    )
