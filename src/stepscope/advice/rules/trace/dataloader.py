"""Rule 1: the input pipeline (DataLoader) takes a large share of the step.

With a monitor output beside the trace (``stepscope run --monitor``), the system view is
evidence too: how long the main process waited for batches over the whole steady window
(not only the few profiled steps), and how busy the DataLoader workers and the cores were.
Workers runnable most of the time on a machine whose cores are all busy are saturated: more
workers cannot help there, so the fix says to make each sample cheaper instead."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.system.series import SystemRun
from stepscope.analysis.system.verdict import WORKER_SATURATED
from stepscope.units import count

THRESHOLD_PCT = 5.0  # torch-tb-profiler's DataLoader rule: > 5 % of the step
CORES_BUSY_PCT = 90.0  # host CPU over the window: no core left for another worker

CODE = """\
loader = torch.utils.data.DataLoader(
    dataset, batch_size=batch_size, shuffle=True,
    num_workers=min(8, os.cpu_count() or 1),  # load batches in parallel worker processes
    pin_memory=True,            # page-locked batches: faster, asynchronous copies to the GPU
    persistent_workers=True,    # keep workers alive between epochs
    prefetch_factor=4,          # batches each worker prepares ahead
)
for x, y in loader:
    x = x.to(device, non_blocking=True)
    y = y.to(device, non_blocking=True)"""


def check(ctx: Context) -> Finding | None:
    a, trace = ctx.a, ctx.trace
    saving = a.breakdown.avg_ns.get("dataloader", 0.0)
    pct = ctx.pct(saving)
    if pct <= THRESHOLD_PCT:
        return None
    host = trace.host
    idx = np.flatnonzero(ctx.loader_rows)
    inside = ctx.in_steps(host.ts[idx], host.end[idx])
    keep = inside > 0
    idx = idx[keep]
    clipped = inside[keep].astype(np.float64)
    loader_names = sorted({trace.strings[i] for i in np.unique(host.name[idx]).tolist()})
    single = any("_SingleProcessDataLoaderIter" in n for n in loader_names)
    # a fetch that straddles the window's edge counts for the part inside it (--step N)
    dur = np.maximum(host.dur[idx].astype(np.float64), 1.0)
    calls = float((clipped / dur).sum()) / ctx.n_steps
    mean = float(host.dur[idx].mean()) if len(idx) else 0.0
    evidence = [
        f"DataLoader time not overlapped with GPU work or other categories: {fmt_ns(saving)} "
        f"per step ({pct:.1f} % of a {fmt_ns(ctx.step_ns)} step)",
        f"{count(calls, 'batch fetch', 'batch fetches')} per step, {fmt_ns(mean)} each on average; "
        f"{fmt_ns(float(clipped.sum()) / ctx.n_steps)} of loader time per step in the steps",
    ]
    partial = int(np.count_nonzero(clipped < host.dur[idx]))
    if partial:
        verb = "straddles" if partial == 1 else "straddle"
        evidence.append(f"{count(partial, 'fetch', 'fetches')} {verb} the edge of the steps: "
                        "only the part inside the steps is counted")
    if ctx.has_gpu and len(idx):
        idle = int(ctx.not_busy(host.ts[idx], host.end[idx]).sum()) / ctx.n_steps
        evidence.append(f"the GPU is idle for {fmt_ns(idle)} per step while batches load")
    # the words follow the run (Premises.training): an inference loop has no "training"
    work = "training" if ctx.premises.training else "the model"
    if single:
        evidence.append("iterator is _SingleProcessDataLoaderIter: num_workers=0, batches are "
                        f"loaded in the main process, serially with {work}")
    # what the loader does: operators inside it, by host self time
    ops = ctx.operators_within(iv.intersect(iv.union(host.ts[idx], host.end[idx]), ctx.window))
    for name, ns, n in top_by_name(host.name[ops], ctx.times.host_self[ops], trace.strings, 3):
        evidence.append(f"inside the loader: {short(name)} ×{n / ctx.n_steps:.0f}/step, "
                        f"{fmt_ns(ns / ctx.n_steps)} self per step")
    seen, saturated = monitor_evidence(ctx.a.system)
    evidence.extend(seen)
    if saturated:
        fix = ("The DataLoader workers are saturated and every core is busy (stepscope "
               "monitor): more workers cannot help on this machine. Make each sample cheaper: "
               "pre-process the dataset once (decode, resize) and store the result, vectorise "
               "the per-sample transform or move augmentation to the GPU; or run where more "
               "cores are free.")
    else:
        fix = ("Load batches in background workers" + (" (num_workers is 0 now)" if single else "")
               + ": raise num_workers, set pin_memory=True, persistent_workers=True and "
               "prefetch_factor; move expensive preprocessing (decoding, resizing) out of the "
               f"{'training ' if ctx.premises.training else ''}loop (pre-process the dataset "
               "once, or do augmentation on the GPU).")
    return ctx.finding(
        id="input-pipeline",
        title=("Training" if ctx.premises.training else "The step")
        + " waits for the input pipeline (DataLoader)",
        saving_ns=saving,
        estimate=("DataLoader time per step that no higher-priority work (GPU kernels, copies, "
                  "runtime calls) overlaps: hidden completely if workers prepare batches ahead."),
        evidence=evidence, fix=fix, code=None if saturated else CODE,  # no "more workers"
        source_lines=ctx.source_lines(idx, clipped),
        references=("https://pytorch.org/docs/stable/data.html#multi-process-data-loading",
                    "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"),
    )


def monitor_evidence(run: SystemRun | None) -> tuple[list[str], bool]:
    """Evidence lines from a monitored run beside the trace, and whether its DataLoader
    workers were saturated on a machine with no core free."""
    if run is None or run.verdict.bound is None:
        return [], False
    s = run.verdict.shares
    cores = run.samples.n_cores
    head = f"stepscope monitor, over its {s.window.seconds:.1f} s steady window"
    lines = []
    if "data" in s.phases:
        lines.append(f"{head}: the main process waited for the next batch "
                     f"{100 * s.phases['data']:.0f} % of the time (verdict: {run.verdict.bound}"
                     f", {run.verdict.confidence} confidence)")
    if s.workers:
        lines.append(f"{head}: {count(s.workers, 'DataLoader worker', 'DataLoader workers')}, "
                     f"each on a CPU {s.worker_cpu:.0f} % of a core and runnable (on a CPU or "
                     f"waiting for one) {100 * s.worker_demand:.0f} % of the time; host CPU "
                     f"{s.host_cpu:.0f} % of {count(cores, 'core', 'cores')}")
    else:
        lines.append(f"{head}: no DataLoader worker processes; the main process loads the "
                     f"batches itself (on a CPU or runnable {100 * s.main_demand:.0f} % of "
                     "the time)")
    saturated = bool(s.workers) and s.worker_demand >= WORKER_SATURATED \
        and s.host_cpu >= CORES_BUSY_PCT
    return lines, saturated
