"""Run every analysis on a trace and assemble the Report (the JSON contract's source).

The JSON layout is a documented, versioned public contract (docs/report-json.md):
bump SCHEMA on any incompatible change.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from stepscope.analysis.efficiency.roofline import Overrides
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.memory.timeline import CategoryTimeline, category_timeline
from stepscope.analysis.suite import Analyses, plan, run_analyses
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.analysis.trace.kernels import KernelRow
from stepscope.analysis.trace.operators import OperatorRow
from stepscope.classify.gpu_peaks import match_peak
from stepscope.model.memory_files import MemoryTimeline
from stepscope.model.trace import DeviceProperties, Trace
from stepscope.report import DEFAULT_TOP
from stepscope.report.json.critical import combined_json, critical_json
from stepscope.report.json.efficiency import efficiency_json
from stepscope.report.json.memory import memory_json, modules_json
from stepscope.report.json.ncu import ncu_json
from stepscope.report.json.nsys import nsys_json
from stepscope.report.json.real_traces import real_trace_json
from stepscope.report.json.rounding import r as _r
from stepscope.report.json.rounding import us as _us
from stepscope.report.json.system import system_json

if TYPE_CHECKING:
    from stepscope.advice.finding import Finding
    from stepscope.advice.replay import Combined
    from stepscope.analysis.distributed.rank import RankSummary
    from stepscope.analysis.nsight.ncu_join import NcuJoin
    from stepscope.analysis.system.series import SystemRun
    from stepscope.analysis.trace.kernel_ops import KernelOpRow
    from stepscope.analysis.trace.operators_stack import StackRow
    from stepscope.model.ncu import NcuReport

SCHEMA = "stepscope.report/1"


TraceTables = tuple["list[KernelOpRow]", list[KernelRow], "list[StackRow]"]


def trace_tables(trace: Trace, tree: OpTree) -> TraceTables:
    """The tables derived from the trace and its operator tree alone (kernels per operator,
    launch configurations, call stacks): the work the report's replay child does aside."""
    from stepscope.analysis.trace.kernel_ops import kernels_by_operator
    from stepscope.analysis.trace.kernels import kernel_config_stats
    from stepscope.analysis.trace.operators_stack import operators_by_stack

    return (kernels_by_operator(trace, tree), kernel_config_stats(trace),
            operators_by_stack(trace, tree))


class Tables:
    """The tables to_json derives from the analyses, computed on first use and kept: to_json
    runs once per output, and `report --html` writes two (the page and the text or JSON).
    ``adopt()`` takes those computed elsewhere (build_report: the replay child's work
    aside); ``warm()`` computes the others ahead, while the report waits for its replays."""

    def __init__(self, analyses: Analyses) -> None:
        self.analyses = analyses

    def adopt(self, known: object) -> None:
        """:func:`trace_tables`' value for this trace (None: nothing to adopt)."""
        if known is None:
            return
        kernel_ops, configs, stacks = cast(TraceTables, known)
        for name, value in (("kernel_ops", kernel_ops), ("kernel_configs", configs),
                            ("op_stacks", stacks)):
            self.__dict__.setdefault(name, value)  # where cached_property keeps its value

    @cached_property
    def kernel_ops(self) -> list[KernelOpRow]:
        from stepscope.analysis.trace.kernel_ops import kernels_by_operator

        return kernels_by_operator(self.analyses.trace, self.analyses.tree)

    @cached_property
    def kernel_configs(self) -> list[KernelRow]:
        from stepscope.analysis.trace.kernels import kernel_config_stats

        return kernel_config_stats(self.analyses.trace)

    @cached_property
    def op_stacks(self) -> list[StackRow]:
        from stepscope.analysis.trace.operators_stack import operators_by_stack

        return operators_by_stack(self.analyses.trace, self.analyses.tree)

    @cached_property
    def rank_summary(self) -> RankSummary | None:
        a = self.analyses
        if not len(a.trace.collectives) and (a.trace.meta.world_size or 1) <= 1:
            return None
        from stepscope.analysis.distributed.rank import rank_summary

        # the whole trace's steps (not a.steps, which may leave warm-up out)
        return rank_summary(a.trace, links=a.links, operators=a.operators)

    def warm(self) -> None:
        """Compute every table not computed yet. One that fails is left to fail where it is
        read, as it would without this (the error is not the replays')."""
        for name in ("kernel_ops", "kernel_configs", "op_stacks", "rank_summary"):
            with contextlib.suppress(Exception):
                getattr(self, name)


@dataclass(frozen=True)
class Report:
    analyses: Analyses
    top: int
    findings: list[Finding] = field(default_factory=list)
    memory_timeline: CategoryTimeline | None = None  # export_memory_timeline beside the trace
    ncu: NcuJoin | None = None  # Nsight Compute kernels joined to this trace (--ncu)
    system_error: str | None = None  # a monitor output beside the trace that cannot be read
    combined: Combined | None = None  # every replayable finding's fix applied together
    tables: Tables | None = field(default=None, repr=False, compare=False)  # None: made here

    def __post_init__(self) -> None:
        if self.tables is None:
            object.__setattr__(self, "tables", Tables(self.analyses))

    @property
    def trace(self) -> Trace:
        return self.analyses.trace

    @property
    def _tables(self) -> Tables:
        assert self.tables is not None  # set by __post_init__
        return self.tables

    @property
    def kernel_ops(self) -> list[KernelOpRow]:
        return self._tables.kernel_ops

    @property
    def kernel_configs(self) -> list[KernelRow]:
        return self._tables.kernel_configs

    @property
    def op_stacks(self) -> list[StackRow]:
        return self._tables.op_stacks

    @property
    def rank_summary(self) -> RankSummary | None:
        """This rank's part of a distributed job; None for a single-process trace."""
        return self._tables.rank_summary

    def to_json(self) -> dict[str, Any]:
        a = self.analyses
        meta = a.trace.meta
        bd = a.breakdown
        return {
            "schema": SCHEMA,
            "source": {
                "path": meta.path,
                "format": meta.format,
                "events": meta.events,
                "vendor": meta.vendor,
                "rank": meta.rank,
                "world_size": meta.world_size,
                "skipped": meta.skipped,
                "warnings": list(meta.warnings),
                # events lost (skipped or after a cut); repaired fields lose nothing
                "partial": bool(meta.skipped) or meta.incomplete,
            },
            "devices": devices_json(a),
            "steps": [
                {
                    "name": s.name,
                    "start_us": _us(s.start),
                    "duration_us": _us(s.duration),
                    "breakdown_us": {c: _us(s.ns[c]) for c in CATEGORIES},
                }
                for s in bd.steps
            ],
            "steps_dropped": list(a.steps.dropped),
            "profiler_steps": a.steps.profiler_steps,
            "breakdown": {
                "step_avg_us": _us(bd.avg_step_ns),
                "avg_us": {c: _us(v) for c, v in bd.avg_ns.items()},
                "pct": {c: round(v, 2) for c, v in bd.pct.items()},
            },
            "gpu": [
                {
                    "device": g.device,
                    "name": g.name,
                    "utilization_pct": _r(g.utilization_pct),
                    "sm_efficiency_pct": _r(g.sm_efficiency_pct),
                    "achieved_occupancy_pct": _r(g.achieved_occupancy_pct),
                    "tensor_core_pct": _r(g.tensor_core_pct),
                }
                for g in a.gpu
            ],
            "operators": [_op_json(r) for r in a.operators[: self.top]],
            "operators_by_shape": [_op_json(r) for r in a.operators_by_shape[: self.top]],
            "kernels": [_kernel_json(k) for k in a.kernels[: self.top]],
            "kernels_by_config": [_kernel_json(k) for k in self.kernel_configs[: self.top]],
            "kernels_by_operator": _kernel_ops_json(self.kernel_ops, self.top),
            "operators_by_stack": _op_stack_json(self.op_stacks, self.top),
            "temporal": []
            if a.temporal is None
            else [
                {
                    "rank": a.temporal.rank,
                    "span_us": _us(a.temporal.span_ns),
                    "idle_pct": round(a.temporal.pct(a.temporal.idle_ns), 2),
                    "compute_pct": round(a.temporal.pct(a.temporal.compute_ns), 2),
                    "non_compute_pct": round(a.temporal.pct(a.temporal.non_compute_ns), 2),
                }
            ],
            "idle": [
                {
                    "rank": s.rank,
                    "device": s.device,
                    "stream": s.stream,
                    "span_us": _us(s.span_ns),
                    "idle_us": _us(s.idle_ns),
                    "host_wait_us": _us(s.host_wait_ns),
                    "kernel_wait_us": _us(s.kernel_wait_ns),
                    "other_us": _us(s.other_ns),
                    "host_wait_pct": round(100 * s.host_wait_ns / s.idle_ns, 2)
                    if s.idle_ns
                    else 0.0,
                    "kernel_wait_pct": round(100 * s.kernel_wait_ns / s.idle_ns, 2)
                    if s.idle_ns
                    else 0.0,
                    "other_pct": round(100 * s.other_ns / s.idle_ns, 2) if s.idle_ns else 0.0,
                }
                for s in a.idle
            ],
            "launches": None
            if a.launches is None
            else {
                "rank": a.launches.rank,
                "launches": a.launches.launches,
                "short_kernels": a.launches.short_kernels,
                "runtime_outliers": a.launches.runtime_outliers,
                "launch_delay_outliers": a.launches.launch_delay_outliers,
                "launch_delay_mean_us": _us(a.launches.delay_mean_ns),
                "launch_delay_p50_us": _us(a.launches.delay_p50_ns),
                "launch_delay_p95_us": _us(a.launches.delay_p95_ns),
                "launch_delay_max_us": _us(a.launches.delay_max_ns),
                "cpu_total_us": _us(a.launches.cpu_total_ns),
                "gpu_total_us": _us(a.launches.gpu_total_ns),
            },
            "findings": [f.to_json() for f in self.findings],
            "critical_path": critical_json(a.critical),
            "whatif": combined_json(self.combined, [w.label for w in a.windows]),
            "memory": memory_json(a.memory, self.top, self.memory_timeline),
            "modules": modules_json(a.modules),
            "efficiency": efficiency_json(a.efficiency),
            **real_trace_json(a),  # issue 9: warm-up, clock skew, communication, graphs
            "nsys": nsys_json(a),
            "ncu": ncu_json(self.ncu),
            "distributed": _rank_part(self.rank_summary),
            # a monitor output beside the trace (stepscope run --monitor): the system view
            "system": system_json(a.system, self.system_error),
        }


def _system(trace: Trace, monitor: str | None) -> tuple[SystemRun | None, str | None]:
    """The monitored run to join, or the one-line reason it could not be read."""
    from stepscope.analysis.system.series import system_run
    from stepscope.errors import StepscopeError
    from stepscope.formats.monitor.read import read_samples, samples_beside

    path = samples_beside(trace.meta.path) if monitor == "beside" else monitor
    if path is None:
        return None, None
    try:
        return system_run(read_samples(path), path), None
    except StepscopeError as exc:
        return None, str(exc)


def _rank_part(summary: RankSummary | None) -> dict[str, Any] | None:
    """A trace of a distributed job shows its own rank's part (report/json/distributed.py)."""
    if summary is None:
        return None
    from stepscope.report.json.distributed import rank_part_json

    return rank_part_json(summary)


def _op_json(r: OperatorRow) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": r.name,
        "calls": r.calls,
        "host_self_us": round(r.host_self_us, 3),
        "host_total_us": round(r.host_total_us, 3),
        "device_self_us": round(r.device_self_us, 3),
        "device_total_us": round(r.device_total_us, 3),
        "tc_eligible": r.tc_eligible,
    }
    if r.input_shape is not None:
        out["input_shape"] = r.input_shape
    return out


def device_label(d: DeviceProperties) -> str:
    """The one name the report gives a device (header, GPU table, efficiency): the recorded
    name, or, when ROCm writes none or a generic one, the model its signature (compute
    capability, CU count, memory) identifies in the peak table, which the efficiency
    figures use too."""
    match = match_peak(d.name, total_memory=d.total_memory,
                       compute=(d.compute_major, d.compute_minor), num_sms=d.num_sms)
    if match is not None and match.how == "signature":
        recorded = f"recorded name {d.name!r}" if d.name.strip() else "no name recorded"
        return f"{match.peak.key} (by signature; {recorded})"
    return d.name or "unnamed"


def devices_json(a: Analyses) -> list[dict[str, Any]]:
    """Devices that ran device work (kernels, copies, memsets); described GPUs that ran
    nothing in the window are left out."""
    ran = set(np.unique(a.trace.device.device).tolist())
    return [
        {
            "id": d.id,
            "name": d.name,
            "label": device_label(d),
            "total_memory_bytes": d.total_memory,
            "compute_capability": f"{d.compute_major}.{d.compute_minor}",
            "num_sms": d.num_sms,
        }
        for d in a.trace.meta.devices
        if d.id in ran
    ]


def _kernel_json(k: KernelRow) -> dict[str, Any]:
    return {
        "name": k.name,
        "calls": k.calls,
        "total_us": round(k.total_us, 3),
        "mean_us": round(k.mean_us, 3),
        "min_us": round(k.min_us, 3),
        "max_us": round(k.max_us, 3),
        "blocks_per_sm": _r(k.blocks_per_sm),
        "achieved_occupancy_pct": _r(k.achieved_occupancy_pct),
        "tensor_cores": k.tensor_cores,
        "grid": list(k.grid) if k.grid else None,
        "block": list(k.block) if k.block else None,
        "registers_per_thread": k.registers,
        "shared_memory_bytes": k.shared_mem,
        "configs": k.configs,
    }


def _kernel_ops_json(rows: list[KernelOpRow], top: int) -> list[dict[str, Any]]:
    return [
        {"kernel": r.kernel, "operator": r.operator, "calls": r.calls,
         "total_us": round(r.total_us, 3), "mean_us": round(r.mean_us, 3),
         "min_us": round(r.min_us, 3), "max_us": round(r.max_us, 3)}
        for r in rows[:top]
    ]


def _op_stack_json(rows: list[StackRow], top: int) -> list[dict[str, Any]]:
    return [
        {"name": r.name, "call_stack": r.call_stack, "calls": r.calls,
         "host_self_us": round(r.host_self_us, 3), "host_total_us": round(r.host_total_us, 3),
         "device_self_us": round(r.device_self_us, 3),
         "device_total_us": round(r.device_total_us, 3)}
        for r in rows[:top]
    ]


def build_report(trace: Trace, *, top: int = DEFAULT_TOP, step: int | None = None,
                 memory_timeline: MemoryTimeline | None = None,
                 peaks: Overrides | None = None, ncu: NcuReport | None = None,
                 monitor: str | None = "beside", window: str | None = None) -> Report:
    """``monitor``: the ``monitor.parquet`` of a monitored run to join as the system view;
    "beside" (default): the one in the trace's folder, if any (``stepscope run --monitor``
    writes it there); None: none. ``window``: the critical path's ``--window NAME[#N]``."""
    from stepscope.advice import Replays, advise_replayed  # the advisor imports analysis
    from stepscope.analysis.nsight.ncu_join import join_ncu

    planned = plan(trace, step=step, window=window)
    # the replay graph is built beside the analyses and the rules on a large trace (it needs
    # only the windows); the findings then say what to replay. Its child then derives the
    # trace's tables, while this process still runs the rules.
    tree = planned.tree
    replays = Replays(trace, planned.links, planned.windows, background=planned.large,
                      aside=lambda: trace_tables(trace, tree))
    try:
        analyses = run_analyses(trace, peaks=peaks, planned=planned)
        system, system_error = _system(trace, monitor)
        if system is not None:
            analyses = replace(analyses, system=system)
        tables = Tables(analyses)

        def share(derived: object) -> None:  # this process's while the child replays
            tables.adopt(derived)  # the tables the child derived ahead, if it did
            tables.warm()  # the others

        replays.meanwhile(share)
        findings, combined = advise_replayed(analyses, replays=replays)
        replays.settle()
    finally:
        replays.close()
    return Report(analyses=analyses, top=top, findings=findings, combined=combined,
                  system_error=system_error, tables=tables,
                  memory_timeline=None if memory_timeline is None
                  else category_timeline(memory_timeline),
                  ncu=None if ncu is None else join_ncu(ncu, trace))
