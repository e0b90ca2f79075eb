"""Every analysis of one trace, run once: the input of the advisor and the renderers."""

from __future__ import annotations

from dataclasses import dataclass

from stepscope.analysis.breakdown import Breakdown, step_breakdown
from stepscope.analysis.gpu import GpuMetrics, gpu_metrics
from stepscope.analysis.idle import StreamIdle, idle_breakdown
from stepscope.analysis.kernels import KernelRow, kernel_stats
from stepscope.analysis.launches import LaunchStats, launch_stats
from stepscope.analysis.links import Links
from stepscope.analysis.nsys_stats import NsysStats, nsys_stats
from stepscope.analysis.operators import OperatorRow, operator_stats
from stepscope.analysis.optree import OpTree
from stepscope.analysis.steps import Steps, find_steps, select_step
from stepscope.analysis.temporal import Temporal, temporal_breakdown
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
    nsys: NsysStats | None = None  # nsys stats summaries, for Nsight Systems exports


def run_analyses(trace: Trace, *, step: int | None = None) -> Analyses:
    links = Links(trace)
    tree = OpTree(trace, links)
    steps = find_steps(trace, links)
    if step is not None:
        steps = select_step(steps, step)
    return Analyses(
        trace=trace,
        links=links,
        tree=tree,
        steps=steps,
        breakdown=step_breakdown(trace, steps, links),
        gpu=gpu_metrics(trace, steps.window, links),
        operators=operator_stats(trace, links=links, tree=tree),
        operators_by_shape=operator_stats(trace, by_shape=True, links=links, tree=tree),
        kernels=kernel_stats(trace),
        temporal=temporal_breakdown(trace, links=links),
        idle=idle_breakdown(trace, links),
        launches=launch_stats(trace, links),
        nsys=nsys_stats(trace) if trace.meta.format == "nsys" else None,
    )
