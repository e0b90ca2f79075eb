"""Synthetic trtexec outputs, written the way trtexec writes them (unescaped names)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from stepscope.model.tensorrt import (
    EngineGraph,
    EngineLayer,
    LayerProfile,
    LayerTime,
    PerfSummary,
    Stat,
    TensorInfo,
    TrtRun,
)


def profile_text(layers: Sequence[tuple[str, float]], count: int = 10, median: bool = True) -> str:
    """``--exportProfile`` text: (name, average ms) per layer, names NOT escaped."""
    total = sum(avg for _, avg in layers) or 1.0
    out = ["[", f'  {{ "count" : {count} }}']
    for name, avg in layers:
        med = f', "medianMs" : {avg:g}' if median else ""
        out.append(
            f', {{ "name" : "{name}", "timeMs" : {avg * count:g}, "averageMs" : {avg:g}'
            f'{med}, "percentage" : {100 * avg / total:g} }}'
        )
    out.append("]")
    return "\n".join(out) + "\n"


def times_text(
    compute: Sequence[float], enq: float = 0.01, h2d: float = 0.0, d2h: float = 0.0
) -> str:
    rows = []
    t = 1.0
    for c in compute:
        rows.append(
            f'{{ "startEnqMs" : {t:g}, "endEnqMs" : {t + enq:g}, "startH2dMs" : {t:g}, '
            f'"endH2dMs" : {t + h2d:g}, "startComputeMs" : {t + h2d:g}, '
            f'"endComputeMs" : {t + h2d + c:g}, "startD2hMs" : {t + h2d + c:g}, '
            f'"endD2hMs" : {t + h2d + c + d2h:g}, "h2dMs" : {h2d:g}, "computeMs" : {c:g}, '
            f'"d2hMs" : {d2h:g}, "latencyMs" : {h2d + c + d2h:g} }}'
        )
        t += h2d + c + d2h
    return "[\n  " + "\n, ".join(rows) + "\n]\n"


def tensor_json(name: str, fmt: str, dims: Sequence[int] = (1, 8, 4, 4)) -> str:
    return (
        '  {\n    "Name": "'
        + name
        + '",\n    "Location": "Device",\n    "Dimensions": ['
        + ",".join(map(str, dims))
        + '],\n    "Format/Datatype": "'
        + fmt
        + '"\n  }'
    )


def layer_info_text(
    layers: Sequence[dict[str, Any]], bindings: Sequence[str] = ("input", "output")
) -> str:
    """Detailed ``--exportLayerInfo`` in trtexec's layout (one key per line, unescaped)."""
    parts = []
    for lay in layers:
        lines = [
            f'  "Name": "{lay["name"]}",',
            f'  "LayerType": "{lay.get("type", "CaskConvolution")}",',
            '  "Inputs": [\n' + ",".join(tensor_json(*t) for t in lay.get("inputs", [])) + "],",
            '  "Outputs": [\n' + ",".join(tensor_json(*t) for t in lay.get("outputs", [])) + "],",
        ]
        if lay.get("tactic"):
            lines.append(f'  "TacticName": "{lay["tactic"]}",')
        lines.append('  "TacticValue": "0x0000000000000001"')
        parts.append("{\n" + "\n".join(lines) + "\n}")
    body = ",".join(parts)
    binds = "\n,".join(f'"{b}"' for b in bindings)
    return '{"Layers": [' + body + '],\n"Bindings": [' + binds + "\n]}\n"


def names_only_text(names: Sequence[str]) -> str:
    return (
        '{"Layers": ['
        + "\n,".join(f'"{n}"' for n in names)
        + '\n],\n"Bindings": ["input"\n,"output"\n]}\n'
    )


LOG_PREFIX = "[11/23/2026-08:00:00] [I] "


def log_text(
    *,
    gpu_median: float = 1.0,
    enq_median: float = 0.1,
    h2d: float = 0.0,
    d2h: float = 0.0,
    warnings: Sequence[str] = (),
    profile_rows: Sequence[tuple[str, float]] = (),
    new_layout: bool = True,
    cuda_graph: str = "Disabled",
    batch: str = "1",
    precision: str = "FP32+FP16",
) -> str:
    def stat(m: float) -> str:
        return (
            f"min = {m * 0.9:g} ms, max = {m * 1.2:g} ms, mean = {m:g} ms, median = {m:g} ms, "
            f"percentile(90%) = {m * 1.05:g} ms, percentile(95%) = {m * 1.1:g} ms, "
            f"percentile(99%) = {m * 1.15:g} ms"
        )

    lat = gpu_median + h2d + d2h
    P = LOG_PREFIX
    lines = [
        "&&&& RUNNING TensorRT.trtexec [TensorRT v100300] # trtexec --loadEngine=m.engine",
        P + "=== Build Options ===",
        P + f"Precision: {precision}",
        P + "",
        P + "=== Inference Options ===",
        P + f"Batch: {batch}",
        P + f"CUDA Graph: {cuda_graph}",
        P + "Data transfers: Enabled",
        P + "",
        P + "=== Device Information ===",
        P + "Selected Device: NVIDIA H100 80GB HBM3",
        P + "Compute Capability: 9.0",
        P + "",
        P + "TensorRT version: 10.3.0",
        P + "Starting inference",
        P + "Warmup completed 10 queries over 200 ms",
        P + "Timing trace has 3000 queries over 3.0 s",
        P + "=== Performance summary ===",
        P + "Throughput: 987.5 qps",
        P + f"Latency: {stat(lat)}",
        P + f"Enqueue Time: {stat(enq_median)}",
        P + f"H2D Latency: {stat(h2d)}",
        P + f"GPU Compute Time: {stat(gpu_median)}",
        P + f"D2H Latency: {stat(d2h)}",
        P + "Total Host Walltime: 3.00123 s",
        P + "Total GPU Compute Time: 2.9 s",
    ]
    lines += [P.replace("[I]", "[W]") + w for w in warnings]
    if profile_rows:
        total = sum(a for _, a in profile_rows) or 1.0
        lines += [P, P + "=== Profile (10 iterations ) ==="]
        if new_layout:
            lines.append(P + "   Time(ms)     Avg.(ms)   Median(ms)   Time(%)   Layer")
            for name, avg in profile_rows:
                lines.append(
                    P
                    + f"{avg * 10:11.2f} {avg:12.4f} {avg:12.4f} {100 * avg / total:9.1f}   {name}"
                )
            lines.append(P + f"{total * 10:11.2f} {total:12.4f} {total:12.4f} {100.0:9.1f}   Total")
        else:
            lines.append(P + "   Layer   Time (ms)   Avg. Time (ms)   Median Time (ms)   Time %")
            for name, avg in profile_rows:
                lines.append(
                    P
                    + f"{name:>60} {avg * 10:11.2f} {avg:16.4f} {avg:18.4f} "
                    + f"{100 * avg / total:8.1f}"
                )
        lines.append(P)
    lines.append("&&&& PASSED TensorRT.trtexec [TensorRT v100300] # trtexec --loadEngine=m.engine")
    return "\n".join(lines) + "\n"


def tensor(name: str, dtype: str) -> TensorInfo:
    return TensorInfo(name=name, dtype=dtype, format=dtype, dims=(1, 8))


def run(
    layers: Sequence[tuple[str, float, str, str, str]],
    *,
    summary: dict[str, float] | None = None,
    options: Sequence[tuple[str, str]] = (),
    name: str = "engine",
    count: int = 10,
) -> TrtRun:
    """A TrtRun from (name, avg ms, type, input dtype, output dtype) rows; tensors chain."""
    total = sum(r[1] for r in layers) or 1.0
    prof = LayerProfile(
        path="p.json",
        count=count,
        layers=tuple(LayerTime(n, a * count, a, a, 100 * a / total) for n, a, *_ in layers),
    )
    glayers = tuple(
        EngineLayer(
            name=n,
            layer_type=t,
            inputs=(tensor(f"t{i}", din),),
            outputs=(tensor(f"t{i + 1}", dout),),
        )
        for i, (n, _a, t, din, dout) in enumerate(layers)
    )
    graph = EngineGraph(
        path="g.json", layers=glayers, bindings=("t0", f"t{len(layers)}"), detailed=True
    )
    perf = None
    if summary is not None:
        stats = tuple(
            (k, Stat(min=v, max=v * 1.1, mean=v, median=v, cv_pct=summary.get("cv")))
            for k, v in summary.items()
            if k != "cv"
        )
        perf = PerfSummary(source="trex-metadata", throughput_qps=1000.0, stats=stats)
    return TrtRun(
        path=f"{name}/", name=name, profile=prof, graph=graph, summary=perf, options=tuple(options)
    )


def nsys_sqlite(
    path: Path,
    layers: Sequence[tuple[str, Sequence[tuple[str, int]]]],
    iterations: int = 2,
    tid: int = 7,
    outside: int = 0,
) -> None:
    """A minimal nsys export: one NVTX range per layer per iteration, kernels launched inside.

    ``layers``: (layer name, [(kernel name, duration ns), ...]). ``outside``: extra kernels
    launched outside any range (e.g. CUDA graph replays).
    """
    con = sqlite3.connect(path)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
            rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER,
            endGlobalTid INTEGER, textId INTEGER, domainId INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
            deviceId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid INTEGER,
            demangledName INTEGER, shortName INTEGER, mangledName INTEGER);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
            eventClass INTEGER, globalTid INTEGER, correlationId INTEGER, nameId INTEGER);
    """)
    ids: dict[str, int] = {}

    def sid(s: str) -> int:
        if s not in ids:
            ids[s] = len(ids) + 1
            con.execute("INSERT INTO StringIds VALUES (?, ?)", (ids[s], s))
        return ids[s]

    launch = sid("cudaLaunchKernel")
    t = 1_000_000
    gpu_t = 1_000_000
    corr = 1
    # an outer range (TensorRT's enqueue) around every iteration: the innermost range must win
    for _ in range(iterations):
        outer_start = t
        for i, (lname, kernels) in enumerate(layers):
            start = t
            for kname, dur in kernels:
                con.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?)",
                    (t + 10, t + 500, 1, tid, corr, launch),
                )
                gpu_t = max(gpu_t, t + 600)
                con.execute(
                    "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?)",
                    (gpu_t, gpu_t + dur, 0, 7, corr, 1, sid(kname), sid(kname), sid(kname)),
                )
                gpu_t += dur
                corr += 1
                t += 1000
            t += 100
            # text inline for even layers, through StringIds for odd ones (both occur in nsys)
            if i % 2 == 0:
                con.execute(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)"
                    " VALUES (?,?,59,?,?,1)",
                    (start, t, lname, tid),
                )
            else:
                con.execute(
                    "INSERT INTO NVTX_EVENTS (start, end, eventType, textId, globalTid, domainId)"
                    " VALUES (?,?,59,?,?,1)",
                    (start, t, sid(lname), tid),
                )
            t += 100
        con.execute(
            "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)"
            " VALUES (?,?,59,?,?,0)",
            (outer_start - 5, t + 5, "ExecutionContext::enqueue", tid),
        )
        t += 1000
    for _ in range(outside):
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?)",
            (t + 10, t + 500, 1, tid, corr, launch),
        )
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?,?,?,?,?,?,?,?,?)",
            (
                gpu_t,
                gpu_t + 1000,
                0,
                7,
                corr,
                1,
                sid("graphKernel"),
                sid("graphKernel"),
                sid("graphKernel"),
            ),
        )
        gpu_t += 1000
        corr += 1
        t += 1000
    con.commit()
    con.close()
