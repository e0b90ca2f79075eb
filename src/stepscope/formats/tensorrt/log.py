"""Reader for trtexec's text log: option blocks, performance summary, warnings,
the ``--dumpProfile`` table (both layouts) and the "Engine Layer Information" dump.

Log lines look like ``[10/31/2023-17:53:30] [I] text`` (levels I, W, E, V; builder lines add
``[TRT] ``). Everything here is line-oriented and never fails on an odd line: unknown lines
are skipped, so a truncated log still yields what it holds.
"""

from __future__ import annotations

import dataclasses
import math
import re

from stepscope.errors import TraceFormatError
from stepscope.formats.tensorrt.exports import dtype_of
from stepscope.model.tensorrt import (
    SUMMARY_METRICS,
    EngineGraph,
    EngineLayer,
    LayerProfile,
    LayerTime,
    PerfSummary,
    Stat,
    TensorInfo,
    TrtLog,
)

_PREFIX = re.compile(r"^\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\] \[(?P<level>[IWEVF])\] (?:\[TRT\] )?")
_RUN = re.compile(
    r"^&&&& (?P<state>RUNNING|PASSED|FAILED) TensorRT\.trtexec(?: \[TensorRT v(?P<v>\d+)\])?"
    r"(?: # (?P<cmd>.*))?"
)
_HEADER = re.compile(r"^=== (?P<block>[A-Za-z ]+?) ===$")
_KV = re.compile(r"^(?P<k>[^:=]{1,60}?):\s*(?P<v>.*)$")
_NUM = r"[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?|inf|nan)"
_STAT_ITEM = re.compile(
    rf"(?P<k>min|max|mean|median|percentile\((?P<p>{_NUM})%\))\s*=\s*(?P<v>{_NUM})"
)
_PROFILE_HEAD = re.compile(r"^=== Profile \((?P<n>\d+) iterations? \) ===")
_NUMS_FIRST = re.compile(
    rf"^\s*(?P<t>{_NUM})\s+(?P<a>{_NUM})\s+(?P<m>{_NUM})\s+(?P<p>{_NUM})\s+(?P<name>\S.*?)\s*$"
)
_NAME_FIRST4 = re.compile(
    rf"^\s*(?P<name>\S.*?)\s+(?P<t>{_NUM})\s+(?P<a>{_NUM})\s+(?P<m>{_NUM})\s+(?P<p>{_NUM})\s*$"
)
_NAME_FIRST3 = re.compile(
    rf"^\s*(?P<name>\S.*?)\s+(?P<t>{_NUM})\s+(?P<a>{_NUM})\s+(?P<m>{_NUM})\s*$"
)
_LAYER_LINE = re.compile(
    r"^Layer\((?P<type>[^)]*)\): (?P<name>.*?), Tactic: (?P<tactic>\S+?), (?P<io>.*)$"
)
# The end of one tensor: " (Dtype[dims])" then ", " or the end; its name is what precedes it.
_TENSOR_TAIL = re.compile(r" \((?P<dt>[A-Za-z0-9]+)\[(?P<dims>[^\]]*)\]\)(?:, |$)")
_SET_TACTIC = re.compile(r"Set Tactic Name: (?P<name>\S+) Tactic: (?P<hex>0x[0-9a-fA-F]+)")
_WALL = re.compile(rf"^Total Host Walltime:\s*(?P<v>{_NUM})\s*s")
_GPU_TOTAL = re.compile(rf"^Total GPU Compute Time:\s*(?P<v>{_NUM})\s*s")
_THROUGHPUT = re.compile(rf"^Throughput:\s*(?P<v>{_NUM})\s*qps")

MAX_WARNINGS = 50


def looks_like_log(head: str) -> bool:
    return "&&&& RUNNING TensorRT.trtexec" in head or (
        bool(_PREFIX.match(head.lstrip())) and "=== Model Options ===" in head
    )


def version_of(code: str) -> str:
    """``8502`` -> ``8.5.2`` (8.x: M*1000+m*100+p), ``100300`` -> ``10.3.0`` (M*10000+m*100+p)."""
    n = int(code)
    if n >= 10000:
        return f"{n // 10000}.{n // 100 % 100}.{n % 100}"
    return f"{n // 1000}.{n // 100 % 10}.{n % 100}"


def _f(text: str) -> float:
    t = text.lower().lstrip("+")
    return math.nan if t in ("nan", "-nan") else float(t)


def parse_stat(text: str) -> Stat | None:
    """``min = 1 ms, max = 2 ms, mean = ..., median = ..., percentile(90%) = ... ms, ...``."""
    vals: dict[str, float] = {}
    pcts: list[tuple[float, float]] = []
    for m in _STAT_ITEM.finditer(text):
        if m.group("p") is not None:
            pcts.append((_f(m.group("p")), _f(m.group("v"))))
        else:
            vals[m.group("k")] = _f(m.group("v"))
    if not all(k in vals for k in ("min", "max", "mean", "median")):
        return None
    return Stat(
        min=vals["min"],
        max=vals["max"],
        mean=vals["mean"],
        median=vals["median"],
        percentiles=tuple(pcts),
    )


def _tensors(text: str) -> tuple[TensorInfo, ...]:
    """``a (Float[1,3]), b (Int8[1,64:4,8,8])`` -> tensors (linear time: names are the text
    between consecutive type tails, so a hostile line cannot make the regex backtrack)."""
    out = []
    text = text.strip()
    start = 0
    for m in _TENSOR_TAIL.finditer(text):
        name = text[start : m.start()]
        start = m.end()
        if not name:
            continue
        dims = []
        for d in m.group("dims").split(","):
            d = d.split(":")[0].strip()
            if d.lstrip("-").isdigit():
                dims.append(int(d))
        out.append(
            TensorInfo(
                name=name,
                dtype=dtype_of(m.group("dt")),
                format=f"{m.group('dt')}[{m.group('dims')}]",
                dims=tuple(dims),
            )
        )
    return tuple(out)


_NAMED_LAYER = re.compile(
    r"^Name: (?P<name>.*?), LayerType: (?P<type>[^,]*), Inputs: \[(?P<ins>.*?\}|\s*)\], "
    r"Outputs: \[(?P<outs>.*?\}|\s*)\](?:, (?P<rest>.*))?$"
)
_NAMED_TENSOR = re.compile(
    r"\{ Name: (?P<name>.*?), (?:Location: (?P<loc>\w+), )?Dimensions: \[(?P<dims>[^\]]*)\], "
    r"Format/Datatype: (?P<fmt>.*?) \}"
)
_NAMED_KEYS = re.compile(r"(?:^|, )(TacticName|TacticValue|StreamId|Metadata): ")


def _named_tensors(text: str) -> tuple[TensorInfo, ...]:
    out = []
    for m in _NAMED_TENSOR.finditer(text):
        dims = tuple(int(d) for d in m.group("dims").split(",") if d.strip().lstrip("-").isdigit())
        fmt = m.group("fmt")
        out.append(
            TensorInfo(
                name=m.group("name"),
                dtype=dtype_of(fmt),
                format=fmt,
                dims=dims,
                location=m.group("loc") or "Device",
            )
        )
    return tuple(out)


def _named_layer_line(line: str) -> EngineLayer | None:
    """TRT 8.6+/10 one-line form: ``Name: n, LayerType: t, Inputs: [ {…} ], Outputs: [ … ],
    TacticName: k, StreamId: 0, Metadata: …``."""
    m = _NAMED_LAYER.match(line)
    if not m:
        return None
    rest = m.group("rest") or ""
    keys: dict[str, str] = {}
    marks = list(_NAMED_KEYS.finditer(rest))
    for i, k in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
        keys[k.group(1)] = rest[k.end() : end].strip()
    return EngineLayer(
        name=m.group("name"),
        layer_type=m.group("type").strip(),
        inputs=_named_tensors(m.group("ins")),
        outputs=_named_tensors(m.group("outs")),
        tactic_name=keys.get("TacticName", ""),
        tactic_value=keys.get("TacticValue", ""),
        metadata=keys.get("Metadata", ""),
        extra=(("StreamId", keys["StreamId"]),) if "StreamId" in keys else (),
    )


def _layer_line(line: str) -> EngineLayer | None:
    if line.startswith("Name: "):
        return _named_layer_line(line)
    m = _LAYER_LINE.match(line)
    if not m:
        return None
    ins, _, outs = m.group("io").partition(" -> ")
    return EngineLayer(
        name=m.group("name"),
        layer_type=m.group("type"),
        inputs=_tensors(ins),
        outputs=_tensors(outs),
        tactic_value=m.group("tactic"),
    )


def _profile_row(msg: str) -> LayerTime | None:
    m = _NUMS_FIRST.match(msg) or _NAME_FIRST4.match(msg)
    if m:
        p = _f(m.group("p"))
    else:
        m = _NAME_FIRST3.match(msg)
        if not m:
            return None
        p = math.nan
    return LayerTime(
        name=m.group("name"),
        time_ms=_f(m.group("t")),
        average_ms=_f(m.group("a")),
        median_ms=_f(m.group("m")),
        percentage=p,
    )


def read_log(data: bytes, path: str) -> TrtLog:
    text = data.decode("utf-8", errors="replace")
    if not looks_like_log(text[:65536]):
        raise TraceFormatError(
            f"{path}: not a trtexec log (no '&&&& RUNNING TensorRT.trtexec' line)"
        )
    version: str | None = None
    command: str | None = None
    passed: bool | None = None
    options: list[tuple[str, list[tuple[str, str]]]] = []
    block: list[tuple[str, str]] | None = None
    stats: dict[str, Stat] = {}
    throughput: float | None = None
    wall: float | None = None
    gpu_total: float | None = None
    warnings: list[str] = []
    seen_w: set[str] = set()
    prof_rows: list[LayerTime] | None = None
    prof_count: int | None = None
    in_profile = False
    in_summary = False
    layers: list[EngineLayer] = []
    in_layers = False
    tactic_names: dict[str, str] = {}  # tactic id -> kernel name ("Set Tactic Name" lines)
    for raw in text.split("\n"):
        line = raw.rstrip("\r")
        run = _RUN.match(line)
        if run:
            if run.group("v"):
                version = version or version_of(run.group("v"))
            command = command or run.group("cmd")
            if run.group("state") != "RUNNING":
                passed = run.group("state") == "PASSED"
            continue
        pm = _PREFIX.match(line)
        if pm is None:
            if in_layers:
                lay = _layer_line(line.strip())
                if lay is not None:
                    layers.append(lay)
            continue
        in_layers = False
        level = pm.group("level")
        msg = line[pm.end() :]
        if level == "V" and "Set Tactic Name: " in msg:
            if tn := _SET_TACTIC.search(msg):
                tactic_names[tn.group("hex").lower()] = tn.group("name")
            continue
        if level in ("W", "E"):
            body = msg.strip()
            if body and body not in seen_w and len(warnings) < MAX_WARNINGS:
                seen_w.add(body)
                warnings.append(("error: " if level == "E" else "") + body)
            continue
        stripped = msg.strip()
        if stripped.endswith(("Layer Information:", "Layers:")):
            in_layers = True
            continue
        if stripped.startswith("Name: ") and ", LayerType: " in stripped:  # logger-prefixed
            lay = _named_layer_line(stripped)
            if lay is not None:
                layers.append(lay)
                in_layers = True
                continue
        if in_profile:
            if stripped.startswith(("Layer ", "Time(ms)", "Time (ms)")) or not stripped:
                if not stripped and prof_rows:
                    in_profile = False
                continue
            row = _profile_row(msg)
            if row is None:
                in_profile = False
            else:
                if row.name != "Total":
                    assert prof_rows is not None
                    prof_rows.append(row)
                continue
        hm = _HEADER.match(stripped)
        if hm:
            name = hm.group("block")
            in_summary = name == "Performance summary"
            block = None
            if name.endswith("Options") or name == "Device Information":
                block = []
                options.append((name, block))
            continue
        pr = _PROFILE_HEAD.match(stripped)
        if pr:
            prof_count = int(pr.group("n"))
            prof_rows = []
            in_profile = True
            continue
        if stripped.startswith("TensorRT version:"):
            version = stripped.split(":", 1)[1].strip() or version
        if block is not None:
            if not stripped:
                block = None
                continue
            kv = _KV.match(stripped)
            if kv:
                block.append((kv.group("k").strip(), kv.group("v").strip()))
            continue
        if in_summary:
            if t := _THROUGHPUT.match(stripped):
                throughput = _f(t.group("v"))
            elif w := _WALL.match(stripped):
                wall = _f(w.group("v"))
            elif g := _GPU_TOTAL.match(stripped):
                gpu_total = _f(g.group("v"))
            else:
                key, sep, rest = stripped.partition(":")
                if sep and key in SUMMARY_METRICS:
                    st = parse_stat(rest)
                    if st is not None:
                        stats[key] = st
    summary = None
    if stats or throughput is not None:
        summary = PerfSummary(
            source="log",
            throughput_qps=throughput,
            stats=tuple((k, stats[k]) for k in SUMMARY_METRICS if k in stats),
            walltime_s=wall,
            gpu_compute_total_s=gpu_total,
        )
    profile = None
    if prof_rows:
        profile = LayerProfile(path=path, count=prof_count, layers=tuple(prof_rows))
    graph = None
    if layers:
        if tactic_names:  # 8.x dumps only the tactic id; the builder log names it
            layers = [
                dataclasses.replace(lay, tactic_name=tactic_names.get(lay.tactic_value.lower(), ""))
                if not lay.tactic_name and lay.tactic_value
                else lay
                for lay in layers
            ]
        graph = EngineGraph(path=path, layers=tuple(layers), bindings=(), detailed=True)
    return TrtLog(
        path=path,
        version=version,
        command=command,
        passed=passed,
        options=tuple((b, tuple(items)) for b, items in options),
        summary=summary,
        warnings=tuple(warnings),
        profile=profile,
        graph=graph,
    )
