"""Every analysis of one trace, run once: the input of the advisor and the renderers.

On a large trace every step's critical path and the step breakdown run in a forked child
(stepscope.forked) while this process computes the others: the same results, on two cores.
"""

from __future__ import annotations

from dataclasses import dataclass

from stepscope import forked
from stepscope.analysis.distributed.comm_kernels import Communication, communication
from stepscope.analysis.efficiency.roofline import Efficiency, Overrides, efficiency
from stepscope.analysis.events.clock_skew import ClockSkew, clock_skew
from stepscope.analysis.events.graphs import Graphs, graphs
from stepscope.analysis.events.links import Links
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.events.steps import Steps, find_steps, select_step
from stepscope.analysis.events.warmup import Warmup, exclude_warmup, find_warmup
from stepscope.analysis.graph.summary import CriticalPaths, critical_paths
from stepscope.analysis.graph.window import Window, find, step_windows
from stepscope.analysis.memory.records import MemoryResult, memory_analysis
from stepscope.analysis.nsight.stats import NsysStats, nsys_stats
from stepscope.analysis.system.series import SystemRun
from stepscope.analysis.trace.breakdown import Breakdown, step_breakdown
from stepscope.analysis.trace.gpu import GpuMetrics, gpu_metrics
from stepscope.analysis.trace.idle import StreamIdle, idle_breakdown
from stepscope.analysis.trace.kernels import KernelRow, kernel_stats
from stepscope.analysis.trace.launches import LaunchStats, launch_stats
from stepscope.analysis.trace.modules import ModulesResult, module_analysis
from stepscope.analysis.trace.operators import OperatorRow, operator_stats
from stepscope.analysis.trace.temporal import Temporal, temporal_breakdown
from stepscope.forked import Forked
from stepscope.model.trace import Trace


@dataclass(frozen=True)
class Analyses:
    """Every analysis result for one trace: the input of the advisor and the renderers."""

    trace: Trace
    links: Links
    tree: OpTree
    steps: Steps
    breakdown: Breakdown
    gpu: list[GpuMetrics]
    operators: list[OperatorRow]
    operators_by_shape: list[OperatorRow]
    kernels: list[KernelRow]
    temporal: Temporal | None
    idle: list[StreamIdle]
    launches: LaunchStats | None
    memory: MemoryResult | None = None
    modules: ModulesResult | None = None
    efficiency: Efficiency | None = None
    # issue 9: steady state, communication, clock skew, graphs
    warmup: Warmup | None = None
    communication: Communication | None = None
    clock_skew: ClockSkew | None = None
    graphs: Graphs | None = None
    nsys: NsysStats | None = None  # nsys stats summaries, for Nsight Systems exports
    system: SystemRun | None = None  # a monitor output beside the trace (report.build)
    # issue 22: the analysed steps as windows (the findings' replays use them), and the
    # critical path of each step, or of the one --window
    windows: tuple[Window, ...] = ()
    critical: CriticalPaths | None = None


@dataclass(frozen=True)
class Plan:
    """What every analysis starts from: the links, the operator tree, the steps analysed
    and their windows. Computed first (:func:`plan`), so that work needing only these can
    start beside the analyses (the report's replay graph: advice.replay)."""

    links: Links
    tree: OpTree
    steps: Steps
    warm: Warmup | None
    windows: list[Window]  # the analysed steps, to the end of their device work
    path_windows: list[Window]  # the critical paths' windows (each step, or --window)
    large: bool  # worth a forked child (stepscope.forked.worth_it)


def plan(trace: Trace, *, step: int | None = None, window: str | None = None) -> Plan:
    links = Links(trace)
    tree = OpTree(trace, links)
    steps = find_steps(trace, links)
    warm = find_warmup(trace, steps, links)
    if step is not None:
        steps = select_step(steps, step)
    elif warm is not None:
        steps = exclude_warmup(steps, warm)
    large = forked.worth_it(len(trace.host) + len(trace.runtime) + len(trace.device))
    if large:  # what every forked child reads, computed once before they fork
        for table in (trace.host, trace.runtime, trace.device):
            _ = table.end
        _ = links.device_host
    return Plan(links, tree, steps, warm, step_windows(steps, device_end=True),
                [find(trace, window)] if window else step_windows(steps), large)


def run_analyses(
    trace: Trace, *, step: int | None = None, peaks: Overrides | None = None,
    window: str | None = None, planned: Plan | None = None,
) -> Analyses:
    """``planned``: :func:`plan`'s result for this trace (then ``step`` and ``window`` are
    its own, not read here)."""
    p = planned if planned is not None else plan(trace, step=step, window=window)
    # every step's critical path (the largest part) and the step breakdown: on a large
    # trace they run in a forked child while this process computes the rest (the split
    # measured at 1 GB: ~1.7 s of CPU in the child, ~2 s here; stepscope.forked)
    child = Forked(lambda: (critical_paths(trace, p.links, p.path_windows),
                            step_breakdown(trace, p.steps, p.links)), enabled=p.large)
    try:
        return _analyses(trace, p.links, p.tree, p.steps, p.warm, p.windows, peaks, child)
    finally:
        child.close()


def _analyses(trace: Trace, links: Links, tree: OpTree, steps: Steps, warm: Warmup | None,
              windows: list[Window], peaks: Overrides | None,
              child: Forked[tuple[CriticalPaths | None, Breakdown]]) -> Analyses:
    gpu = gpu_metrics(trace, steps.window, links)
    operators = operator_stats(trace, links=links, tree=tree)
    by_shape = operator_stats(trace, by_shape=True, links=links, tree=tree)
    kernels = kernel_stats(trace)
    temporal = temporal_breakdown(trace, links=links)
    idle = idle_breakdown(trace, links)
    launches = launch_stats(trace, links)
    memory = memory_analysis(trace, steps, tree)
    modules = module_analysis(trace, links, tree)
    eff = efficiency(trace, tree, steps, peaks)
    comm = communication(trace, steps, links)
    skew = clock_skew(trace, links)
    cuda_graphs = graphs(trace, links)
    nsys = nsys_stats(trace) if trace.meta.format == "nsys" else None
    critical, breakdown = child.result()  # last: the child ran meanwhile
    return Analyses(
        trace=trace, links=links, tree=tree, steps=steps, breakdown=breakdown, gpu=gpu,
        operators=operators, operators_by_shape=by_shape, kernels=kernels,
        temporal=temporal, idle=idle, launches=launches, memory=memory, modules=modules,
        efficiency=eff, warmup=warm, communication=comm, clock_skew=skew,
        graphs=cuda_graphs, nsys=nsys, windows=tuple(windows), critical=critical,
    )
