"""Find and read every trtexec output of one engine: a file, its trex-named siblings, or a folder.

Files are recognised by content, not name. trex's naming (``<engine>.profile.json``,
``.graph.json``, ``.timing.json``, ``.profile.metadata.json``, ``.build.metadata.json``,
``.metadata.json``) groups a file with its siblings; other names (``profile.json``,
``times.json``, ``layer_info.json``, ``trt.out``) group by folder.
"""

from __future__ import annotations

import os
import re
import zlib
from typing import Any

import msgspec

from stepscope.errors import TraceFormatError, TraceSourceError
from stepscope.formats.tensorrt.exports import (
    looks_like_layer_info,
    looks_like_profile,
    looks_like_times,
    read_layer_info,
    read_profile,
    read_times,
)
from stepscope.formats.tensorrt.log import looks_like_log, read_log
from stepscope.io.source import is_url, local_path, read_source
from stepscope.model.tensorrt import SUMMARY_METRICS, PerfSummary, Stat, TrtRun

KINDS = (
    "profile",
    "times",
    "layer_info",
    "log",
    "profile_meta",
    "build_meta",
    "device_meta",
    "output",
)
_TREX_NAME = re.compile(
    r"^(?P<engine>.+?)\.(?:profile\.metadata\.json|build\.metadata\.json|metadata\.json|"
    r"profile\.json|graph\.json|timing\.json|profile\.log|build\.log)$"
)
_CANDIDATE_EXT = (".json", ".log", ".out", ".txt", ".json.gz", ".log.gz")
HEAD = 4096


def sniff(head: str) -> str | None:
    """The kind of trtexec output whose first bytes are ``head`` (None: not one)."""
    s = head.lstrip()
    if looks_like_log(head):
        return "log"
    if looks_like_times(head) or (s.startswith("[") and '"startInMs"' in s[:400]):
        return "times"
    if looks_like_profile(head):
        return "profile"
    if looks_like_layer_info(head):
        return "layer_info"
    if s.startswith("{") and '"performance_summary"' in s[:400]:
        return "profile_meta"
    if s.startswith("{") and ('"model_options"' in s[:200] or '"build_options"' in s[:200]):
        return "build_meta"
    if s.startswith("[") and '"ComputeCapability"' in s[:2000] and '"Name"' in s[:200]:
        return "device_meta"
    if s.startswith("[") and '"dimensions"' in s[:400] and '"values"' in s[:2000]:
        return "output"
    return None


def _head(path: str) -> str:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(HEAD)
    except OSError:
        return ""
    if raw[:2] == b"\x1f\x8b":
        import gzip

        try:
            with gzip.open(path, "rb") as gz:
                raw = gz.read(HEAD)
        except (OSError, EOFError, zlib.error):  # corrupt gzip: not ours; the trace reader says why
            return ""
    return raw.decode("utf-8", errors="replace")


def _candidates(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError as exc:
        raise TraceSourceError(f"{folder}: cannot list ({exc.strerror})") from None
    return [
        os.path.join(folder, n)
        for n in names
        if n.endswith(_CANDIDATE_EXT) and os.path.isfile(os.path.join(folder, n))
    ]


def is_trtexec_output(path: str) -> bool:
    """True when ``path`` is a trtexec output file, or a local folder holding some."""
    if is_url(path):
        return False
    local = local_path(path)
    if os.path.isdir(local):
        return any(sniff(_head(p)) for p in _candidates(local))
    if not os.path.isfile(local):
        return False
    return sniff(_head(local)) not in (None, "output")


def _engine_of(path: str) -> str | None:
    m = _TREX_NAME.match(os.path.basename(path))
    return m.group("engine") if m else None


def find_files(path: str) -> tuple[str, dict[str, str]]:
    """(engine name, {kind: file}) for a file (with its trex siblings) or a folder."""
    local = local_path(path)
    if os.path.isdir(local):
        files = [(p, sniff(_head(p))) for p in _candidates(local)]
        found = [(p, k) for p, k in files if k not in (None, "output")]
        if not found:
            raise TraceFormatError(
                f"{path}: folder holds no trtexec outputs "
                "(--exportProfile/--exportTimes/--exportLayerInfo JSON or a log)"
            )
        traces = [os.path.basename(p) for p, k in files
                  if k is None and '"traceEvents"' in _head(p)]
        if traces:  # one would be left out without a word: say so, and how to choose
            raise TraceFormatError(
                f"{path}: folder holds both trtexec outputs and profiler traces "
                f"({', '.join(traces[:2])}{', …' if len(traces) > 2 else ''}); give the "
                "trace files, or move them out to report the engine"
            )
        engines = sorted({e for p, _ in found if (e := _engine_of(p)) is not None})
        if len(engines) > 1:
            raise TraceFormatError(
                f"{path}: folder holds outputs of {len(engines)} engines "
                f"({', '.join(engines[:4])}{', …' if len(engines) > 4 else ''}); give one file"
            )
        name = engines[0] if engines else os.path.basename(os.path.normpath(local)) or local
    else:
        kind = sniff(_head(local))
        if kind in (None, "output"):
            raise TraceFormatError(f"{path}: not a trtexec output")
        engine = _engine_of(local)
        found = [(local, kind)]
        if engine is not None:
            folder = os.path.dirname(local) or "."
            for p in _candidates(folder):
                # "x.profile.json" is listed as "./x.profile.json": compare whole paths
                if os.path.abspath(p) != os.path.abspath(local) and _engine_of(p) == engine:
                    k = sniff(_head(p))
                    if k not in (None, "output"):
                        found.append((p, k))
        name = engine or os.path.basename(local)
    by_kind: dict[str, str] = {}
    for p, k in found:
        assert k is not None
        if k in by_kind:
            raise TraceFormatError(
                f"{path}: two {k.replace('_', ' ')} files ({os.path.basename(by_kind[k])}, "
                f"{os.path.basename(p)}); give one file"
            )
        by_kind[k] = p
    return name, by_kind


def _json(data: bytes, path: str) -> Any:
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, ValueError, RecursionError):
        raise TraceFormatError(f"{path}: invalid JSON") from None


def _trex_summary(doc: Any, path: str) -> PerfSummary | None:
    """trex's parse of the summary: ``{metric: [min, max, mean, median, p90, p95, p99]}``."""
    ps = doc.get("performance_summary") if isinstance(doc, dict) else None
    if not isinstance(ps, dict):
        return None
    stats: list[tuple[str, Stat]] = []
    for metric in SUMMARY_METRICS:
        v = ps.get(metric)
        if (
            isinstance(v, list)
            and len(v) >= 4
            and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v)
        ):
            pcts = tuple(zip((90.0, 95.0, 99.0), (float(x) for x in v[4:7]), strict=False))
            stats.append(
                (
                    metric,
                    Stat(
                        min=float(v[0]),
                        max=float(v[1]),
                        mean=float(v[2]),
                        median=float(v[3]),
                        percentiles=pcts,
                    ),
                )
            )

    def num(key: str) -> float | None:
        x = ps.get(key)
        return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None

    return PerfSummary(
        source="trex-metadata",
        throughput_qps=num("Throughput"),
        stats=tuple(stats),
        walltime_s=num("Total Host Walltime"),
        gpu_compute_total_s=num("Total GPU Compute Time"),
    )


def _pairs(obj: Any) -> list[tuple[str, str]]:
    if not isinstance(obj, dict):
        return []
    return [(str(k), str(v)) for k, v in obj.items() if not isinstance(v, (dict, list))]


_DEVICE_KEYS = {
    "Name": "Selected Device",
    "ComputeCapability": "Compute Capability",
    "TotalMemory": "Device Global Memory",
    "MULTIPROCESSOR_COUNT": "SMs",
    "CLOCK_RATE": "Compute Clock Rate (kHz)",
    "CUDA_VERSION": "CUDA version",
}


def load_trt_run(path: str) -> TrtRun:
    """Read every trtexec output of the engine at ``path`` (file or folder)."""
    local = local_path(path)
    if not os.path.exists(local):
        raise TraceSourceError(f"{path}: no such file or folder")
    name, files = find_files(path)
    kw: dict[str, Any] = {}
    warnings: list[str] = []
    options: list[tuple[str, str]] = []
    device: list[tuple[str, str]] = []

    def data(kind: str) -> bytes:
        return bytes(read_source(files[kind]).data)

    if "profile" in files:
        kw["profile"] = read_profile(data("profile"), files["profile"])
        if kw["profile"].salvaged:
            warnings.append(
                f"{os.path.basename(files['profile'])}: invalid JSON (unescaped "
                "quotes in layer names?); read record by record"
            )
    if "times" in files:
        kw["times"] = read_times(data("times"), files["times"])
    if "layer_info" in files:
        kw["graph"] = read_layer_info(data("layer_info"), files["layer_info"])
        if kw["graph"].salvaged:
            warnings.append(
                f"{os.path.basename(files['layer_info'])}: invalid JSON (unescaped "
                "quotes in names?); repaired line by line"
            )
    if "log" in files:
        log = read_log(data("log"), files["log"])
        kw["log"] = log
        if "profile" not in kw and log.profile is not None:
            kw["profile"] = log.profile
        graph = kw.get("graph")
        if log.graph is not None and (graph is None or not graph.detailed):
            kw["graph"] = log.graph
        for block, items in log.options:
            if block == "Device Information":
                device.extend(items)
    if "profile_meta" in files:
        doc = _json(data("profile_meta"), files["profile_meta"])
        kw["summary"] = _trex_summary(doc, files["profile_meta"])
        if isinstance(doc, dict):
            options.extend(_pairs(doc.get("inference_options")))
            device.extend(_pairs(doc.get("device_information")))
    if "build_meta" in files:
        doc = _json(data("build_meta"), files["build_meta"])
        if isinstance(doc, dict):
            options.extend(_pairs(doc.get("model_options")))
            options.extend(_pairs(doc.get("build_options")))
    if "device_meta" in files and not device:
        doc = _json(data("device_meta"), files["device_meta"])
        first = doc[0] if isinstance(doc, list) and doc and isinstance(doc[0], dict) else {}
        for key, label in _DEVICE_KEYS.items():
            if key in first:
                v = first[key]
                device.append((label, ".".join(map(str, v)) if isinstance(v, list) else str(v)))
    return TrtRun(
        path=path,
        name=name,
        options=tuple(options),
        device=tuple(device),
        files=tuple(sorted(files.values())),
        warnings=tuple(warnings),
        **kw,
    )
