"""TensorRT engine analysis: per-layer table, reformat overhead, precision mix, timing
summary and the engine graph (layers and tensors) for the dashboard.

Per-layer times come from ``--exportProfile`` (or the log's ``--dumpProfile`` table); they
are measured with per-layer CUDA events in a separate profiling run, so their sum is larger
than the end-to-end GPU compute time (see docs/tensorrt.md).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.analysis.tensorrt.names import DecodedName, decode_kernel, decode_layer, onnx_nodes
from stepscope.model.tensorrt import (
    EngineLayer,
    IterationTimes,
    LayerTime,
    PerfSummary,
    Stat,
    TrtRun,
)
from stepscope.units import round_finite

PERCENTILES = (90.0, 95.0, 99.0)
_PROFILE_SUFFIX = re.compile(r" \[profile \d+\]$")
# Precisions from lowest to highest: the "engine precision" is the lowest one enabled/used.
PRECISION_ORDER = ("FP4", "INT4", "FP8", "INT8", "FP16", "BF16", "TF32", "FP32")


@dataclass(frozen=True)
class LayerRow:
    name: str
    index: int  # execution order in the profile (or the layer info)
    time_ms: float | None  # total over the profiled iterations
    average_ms: float | None  # per inference
    median_ms: float | None
    share_pct: float | None  # of the summed per-layer time
    calls: int | None  # profiled iterations
    layer_type: str
    precision: str | None  # compute precision: first input's type (see docs/tensorrt.md)
    input_formats: tuple[str, ...]
    output_formats: tuple[str, ...]
    input_types: tuple[str, ...]
    output_types: tuple[str, ...]
    tactic: str
    decoded: DecodedName
    kernel: DecodedName | None  # decoded TacticName when the layer info has one
    is_reformat: bool
    converts_precision: bool  # a reformat whose input and output types differ
    gpu_ms: float | None = None  # per inference, from an nsys export (kernels mapped to layers)
    gpu_kernels: tuple[tuple[str, float, int], ...] = ()  # (kernel, ms per inference, launches)
    onnx_nodes: tuple[str, ...] = ()  # from the layer info's Metadata (TRT 8.6+)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "index": self.index,
            "time_ms": round_finite(self.time_ms, 6),
            "average_ms": round_finite(self.average_ms, 6),
            "median_ms": round_finite(self.median_ms, 6),
            "share_pct": round_finite(self.share_pct, 2),
            "calls": self.calls,
            "type": self.layer_type,
            "precision": self.precision,
            "input_formats": list(self.input_formats),
            "output_formats": list(self.output_formats),
            "input_types": list(self.input_types),
            "output_types": list(self.output_types),
            "tactic": self.tactic,
            "decoded": self.decoded.to_json(),
            "kernel": None if self.kernel is None else self.kernel.to_json(),
            "reformat": self.is_reformat,
            "converts_precision": self.converts_precision,
            "gpu_ms": round_finite(self.gpu_ms, 6),
            "onnx_nodes": list(self.onnx_nodes),
            "gpu_kernels": [
                {"name": k, "ms": round_finite(ms, 6), "launches": n,
                 "decoded": decode_kernel(k).summary}
                for k, ms, n in self.gpu_kernels
            ],
        }


@dataclass(frozen=True)
class Share:
    key: str
    average_ms: float
    share_pct: float
    layers: int

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "average_ms": round(self.average_ms, 6),
            "share_pct": round(self.share_pct, 2),
            "layers": self.layers,
        }


@dataclass(frozen=True)
class Reformats:
    layers: int
    average_ms: float  # per inference, all reformat layers
    share_pct: float
    converting: int  # of them change the data type (not only the layout)
    converting_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "layers": self.layers,
            "average_ms": round(self.average_ms, 6),
            "share_pct": round(self.share_pct, 2),
            "converting_precision": self.converting,
            "converting_average_ms": round(self.converting_ms, 6),
        }


@dataclass(frozen=True)
class GraphNode:
    id: int
    name: str
    type: str
    precision: str | None
    average_ms: float | None


@dataclass(frozen=True)
class GraphEdge:
    tensor: str
    src: int  # layer id, -1 = network input (binding)
    dst: int  # layer id, -1 = network output
    dtype: str
    dims: tuple[int, ...]


@dataclass(frozen=True)
class EngineGraphData:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    bindings: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "nodes": [
                {
                    "id": n.id,
                    "name": n.name,
                    "type": n.type,
                    "precision": n.precision,
                    "average_ms": round_finite(n.average_ms, 6),
                }
                for n in self.nodes
            ],
            "edges": [
                {
                    "tensor": e.tensor,
                    "from": e.src,
                    "to": e.dst,
                    "dtype": e.dtype,
                    "dims": list(e.dims),
                }
                for e in self.edges
            ],
            "bindings": list(self.bindings),
        }


MAX_POINTS = 2000  # per-iteration series are bucketed to at most this many points


@dataclass(frozen=True)
class IterationSeries:
    """--exportTimes per iteration, bucketed (consecutive iterations) for plotting."""

    iterations: int
    bucket: int  # iterations per point
    first: tuple[int, ...]  # index of each bucket's first iteration
    compute_mean_ms: tuple[float, ...]
    compute_max_ms: tuple[float, ...]
    latency_mean_ms: tuple[float, ...]
    enqueue_mean_ms: tuple[float, ...]

    def to_json(self) -> dict[str, Any]:
        def r(xs: tuple[float, ...]) -> list[float | None]:
            return [round_finite(x, 6) for x in xs]

        return {
            "iterations": self.iterations,
            "bucket": self.bucket,
            "first": list(self.first),
            "compute_mean_ms": r(self.compute_mean_ms),
            "compute_max_ms": r(self.compute_max_ms),
            "latency_mean_ms": r(self.latency_mean_ms),
            "enqueue_mean_ms": r(self.enqueue_mean_ms),
        }


def iteration_series(t: IterationTimes, max_points: int = MAX_POINTS) -> IterationSeries:
    n = len(t)
    bucket = max(1, -(-n // max_points))  # ceil
    starts = np.arange(0, n, bucket, dtype=np.int64)
    sizes = np.diff(np.append(starts, n)).astype(np.float64)

    def mean(v: npt.NDArray[np.float64]) -> tuple[float, ...]:
        return tuple((np.add.reduceat(np.nan_to_num(v), starts) / sizes).tolist())

    compute = np.nan_to_num(t.compute)
    return IterationSeries(
        iterations=n,
        bucket=bucket,
        first=tuple(starts.tolist()),
        compute_mean_ms=mean(t.compute),
        compute_max_ms=tuple(np.maximum.reduceat(compute, starts).tolist()) if n else (),
        latency_mean_ms=mean(t.latency),
        enqueue_mean_ms=mean(t.end_enq - t.start_enq),
    )


@dataclass(frozen=True)
class TrtAnalysis:
    run: TrtRun
    layers: tuple[LayerRow, ...]
    profiled_iterations: int | None
    layer_total_ms: float  # sum of per-layer average ms = one inference, per-layer timed
    reformats: Reformats
    precision_mix: tuple[Share, ...]
    by_type: tuple[Share, ...]
    summary: PerfSummary | None
    timing_cv_pct: float | None  # GPU compute coefficient of variance (exportTimes)
    engine_precision: str | None  # lowest precision the engine was built for / uses
    graph: EngineGraphData | None
    batch: int | None
    notes: tuple[str, ...] = field(default_factory=tuple)
    iterations: IterationSeries | None = None  # --exportTimes, bucketed for plotting

    @property
    def inference_ms(self) -> float | None:
        """Per-inference time used to scale savings: summary GPU compute mean, else layers."""
        s = self.summary.get("GPU Compute Time") if self.summary else None
        if s is not None and s.mean > 0:
            return s.mean
        return self.layer_total_ms if self.layer_total_ms > 0 else None


def base_layer_name(name: str) -> str:
    """A layer's name without the `` [profile N]`` suffix of optimisation profiles."""
    return _PROFILE_SUFFIX.sub("", name)


_COMPUTE_TYPES = set(PRECISION_ORDER)


def _precision(layer: EngineLayer | None, decoded: DecodedName) -> str | None:
    """First input's data type, skipping index/shape types (INT32, INT64, BOOL); for opaque
    Myelin regions the lowest precision among all their tensors (they compute in it even
    when fed FP32 network inputs)."""
    if layer is None:
        return None
    tensors = layer.inputs + layer.outputs
    if decoded.kind in ("myelin-region", "myelin", "myelin-tag"):
        found = [t.dtype for t in tensors if t.dtype in _COMPUTE_TYPES]
        if found:
            return min(found, key=PRECISION_ORDER.index)
    for t in tensors:
        if t.dtype in _COMPUTE_TYPES:
            return t.dtype
    for t in tensors:
        if t.dtype != "?":
            return t.dtype
    return None


def _row(
    i: int,
    lt: LayerTime | None,
    layer: EngineLayer | None,
    name: str,
    total: float,
    count: int | None,
) -> LayerRow:
    ltype = layer.layer_type if layer is not None else ""
    decoded = decode_layer(name)
    ins = tuple(t.dtype for t in layer.inputs) if layer else ()
    outs = tuple(t.dtype for t in layer.outputs) if layer else ()
    is_ref = ltype == "Reformat" or decoded.kind == "reformat"
    in_types = {t for t in ins if t != "?"}
    out_types = {t for t in outs if t != "?"}
    converts = bool(is_ref and in_types and out_types and in_types != out_types)
    tactic = (layer.tactic_name or layer.tactic_value) if layer else ""
    kernel = decode_kernel(layer.tactic_name) if layer is not None and layer.tactic_name else None
    return LayerRow(
        name=name,
        index=i,
        time_ms=lt.time_ms if lt else None,
        average_ms=lt.average_ms if lt else None,
        median_ms=lt.median_ms if lt else None,
        share_pct=(100.0 * lt.average_ms / total) if lt and total > 0 else None,
        calls=count if lt else None,
        layer_type=ltype,
        precision=_precision(layer, decoded),
        input_formats=tuple(t.format for t in layer.inputs) if layer else (),
        output_formats=tuple(t.format for t in layer.outputs) if layer else (),
        input_types=ins,
        output_types=outs,
        tactic=tactic,
        decoded=decoded,
        kernel=kernel,
        is_reformat=is_ref,
        converts_precision=converts,
        onnx_nodes=onnx_nodes(layer.metadata) if layer is not None else (),
    )


def _shares(rows: tuple[LayerRow, ...], key: str, total: float) -> tuple[Share, ...]:
    acc: dict[str, tuple[float, int]] = {}
    for r in rows:
        k = getattr(r, key) or "unknown"
        ms, n = acc.get(k, (0.0, 0))
        acc[k] = (ms + (r.average_ms or 0.0), n + 1)
    out = [Share(k, ms, 100.0 * ms / total if total > 0 else 0.0, n) for k, (ms, n) in acc.items()]
    return tuple(sorted(out, key=lambda s: (-s.average_ms, s.key)))


def trtexec_percentile(sorted_values: npt.NDArray[np.float64], p: float) -> float:
    """trtexec's percentile: value at sorted index max(n-1-floor((1-p/100)*n), 0)."""
    n = len(sorted_values)
    idx = max(n - 1 - math.floor((100.0 - p) * n / 100.0 + 1e-9), 0)
    return float(sorted_values[idx])


def stat_of(values: npt.NDArray[np.float64]) -> Stat | None:
    v = np.sort(values[np.isfinite(values)])
    if len(v) == 0:
        return None
    with np.errstate(over="ignore", invalid="ignore"):  # corrupt values near float's max
        mean = float(v.mean())
        cv = float(v.std() / mean * 100.0) if mean > 0 else None
    if cv is not None and not math.isfinite(cv):
        cv = None
    return Stat(
        min=float(v[0]),
        max=float(v[-1]),
        mean=mean,
        median=float(np.median(v)),
        percentiles=tuple((p, trtexec_percentile(v, p)) for p in PERCENTILES),
        cv_pct=cv,
    )


def summary_from_times(t: IterationTimes) -> PerfSummary:
    """The performance summary trtexec would print, recomputed from ``--exportTimes``."""
    metrics = (
        ("Latency", t.latency),
        ("Enqueue Time", t.end_enq - t.start_enq),
        ("H2D Latency", t.h2d),
        ("GPU Compute Time", t.compute),
        ("D2H Latency", t.d2h),
    )
    stats = tuple((k, s) for k, v in metrics if (s := stat_of(v)) is not None)
    ends, starts = t.end_compute[np.isfinite(t.end_compute)], t.start_enq[np.isfinite(t.start_enq)]
    # (times files without these fields: no span, and no all-NaN warning from nanmax)
    span_ms = float(ends.max() - starts.min()) if len(ends) and len(starts) else math.nan
    qps = len(t) / (span_ms / 1000.0) if math.isfinite(span_ms) and span_ms > 0 else None
    return PerfSummary(
        source="times",
        throughput_qps=qps,
        stats=stats,
        walltime_s=span_ms / 1000.0 if qps else None,
        gpu_compute_total_s=float(np.nansum(t.compute)) / 1000.0,
    )


def _graph(
    rows: tuple[LayerRow, ...], layers: list[EngineLayer | None], bindings: tuple[str, ...]
) -> EngineGraphData | None:
    if not any(lay is not None and (lay.inputs or lay.outputs) for lay in layers):
        return None
    nodes = tuple(GraphNode(r.index, r.name, r.layer_type, r.precision, r.average_ms) for r in rows)
    producer: dict[str, int] = {}
    for r, lay in zip(rows, layers, strict=True):
        for t in lay.outputs if lay else ():
            producer.setdefault(t.name, r.index)
    edges: list[GraphEdge] = []
    consumed: set[str] = set()
    for r, lay in zip(rows, layers, strict=True):
        for t in lay.inputs if lay else ():
            consumed.add(t.name)
            edges.append(GraphEdge(t.name, producer.get(t.name, -1), r.index, t.dtype, t.dims))
    for r, lay in zip(rows, layers, strict=True):
        for t in lay.outputs if lay else ():
            if t.name not in consumed:
                edges.append(GraphEdge(t.name, r.index, -1, t.dtype, t.dims))
    return EngineGraphData(nodes, tuple(edges), bindings)


def _engine_precision(run: TrtRun, rows: tuple[LayerRow, ...]) -> str | None:
    built = (run.option("Precision") or "").upper()  # "FP32+FP16+INT8"
    enabled = [p for p in PRECISION_ORDER if p in built]
    used = {r.precision for r in rows if r.precision}
    cands = enabled or [p for p in PRECISION_ORDER if p in used]
    return cands[0] if cands else None


def _batch(run: TrtRun) -> int | None:
    b = run.option("Batch")
    if b is not None and b.strip().isdigit():
        return int(b.strip())
    shapes = run.option("Input inference shapes") or ""
    m = re.search(r":(\d+)x", shapes)  # "input:8x3x224x224"
    return int(m.group(1)) if m else None


def analyse_tensorrt(run: TrtRun) -> TrtAnalysis:
    graph_layers = run.graph.layers if run.graph else ()
    by_name: dict[str, EngineLayer] = {}
    for lay in graph_layers:
        by_name.setdefault(lay.name, lay)
        by_name.setdefault(base_layer_name(lay.name), lay)
    notes: list[str] = []
    rows_l: list[LayerRow] = []
    matched: list[EngineLayer | None] = []
    if run.profile is not None and run.profile.layers:
        prof = run.profile
        total = float(sum(lt.average_ms for lt in prof.layers if math.isfinite(lt.average_ms)))
        for i, lt in enumerate(prof.layers):
            found: EngineLayer | None = (by_name.get(lt.name)
                                         or by_name.get(base_layer_name(lt.name)))
            matched.append(found)
            rows_l.append(_row(i, lt, found, lt.name, total, prof.count))
        if graph_layers:
            missing = sum(1 for m in matched if m is None)
            if missing:
                notes.append(f"{missing} profiled layer(s) not found in the layer info")
    else:
        total = 0.0
        for i, lay in enumerate(graph_layers):
            matched.append(lay)
            rows_l.append(_row(i, None, lay, lay.name, 0.0, None))
        if graph_layers:
            notes.append("no per-layer profile (--exportProfile): layer times unknown")
    rows = tuple(rows_l)
    ref = [r for r in rows if r.is_reformat]
    ref_ms = sum(r.average_ms or 0.0 for r in ref)
    conv = [r for r in ref if r.converts_precision]
    reformats = Reformats(
        len(ref),
        ref_ms,
        100.0 * ref_ms / total if total > 0 else 0.0,
        len(conv),
        sum(r.average_ms or 0.0 for r in conv),
    )
    summary = None
    if run.log is not None and run.log.summary is not None:
        summary = run.log.summary
    elif run.summary is not None and run.summary.stats:
        summary = run.summary
    elif run.times is not None:
        summary = summary_from_times(run.times)
    cv = None
    if run.times is not None:
        st = stat_of(run.times.compute)
        cv = st.cv_pct if st else None
    return TrtAnalysis(
        run=run,
        layers=rows,
        profiled_iterations=run.profile.count if run.profile else None,
        layer_total_ms=total,
        reformats=reformats,
        precision_mix=_shares(rows, "precision", total),
        by_type=_shares(rows, "layer_type", total),
        summary=summary,
        timing_cv_pct=cv,
        engine_precision=_engine_precision(run, rows),
        graph=_graph(rows, matched, run.graph.bindings if run.graph else ()),
        batch=_batch(run),
        notes=tuple(notes),
        iterations=iteration_series(run.times)
        if run.times is not None and len(run.times)
        else None,
    )


def with_gpu_times(
    a: TrtAnalysis,
    gpu_ms: dict[str, float],
    kernels: dict[str, tuple[tuple[str, float, int], ...]] | None = None,
) -> TrtAnalysis:
    """``a`` with per-layer GPU time (per inference) and kernels from an nsys export."""
    import dataclasses

    kernels = kernels or {}

    def pick(d: dict[str, Any], name: str) -> Any:
        return d.get(name, d.get(base_layer_name(name)))

    rows = tuple(
        dataclasses.replace(r, gpu_ms=pick(gpu_ms, r.name), gpu_kernels=pick(kernels, r.name) or ())
        for r in a.layers
    )
    return dataclasses.replace(a, layers=rows)


def stat_json(s: Stat) -> dict[str, Any]:
    return {
        "min_ms": round_finite(s.min, 6),
        "max_ms": round_finite(s.max, 6),
        "mean_ms": round_finite(s.mean, 6),
        "median_ms": round_finite(s.median, 6),
        "percentiles_ms": {f"p{p:g}": round_finite(v, 6) for p, v in s.percentiles},
        "cv_pct": round_finite(s.cv_pct, 3),
    }


def summary_json(s: PerfSummary | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "source": s.source,
        "throughput_qps": round_finite(s.throughput_qps, 3),
        "walltime_s": round_finite(s.walltime_s, 6),
        "gpu_compute_total_s": round_finite(s.gpu_compute_total_s, 6),
        "metrics": {k: stat_json(v) for k, v in s.stats},
    }
