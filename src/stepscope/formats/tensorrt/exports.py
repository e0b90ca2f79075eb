"""Readers for trtexec's JSON exports: --exportProfile, --exportTimes, --exportLayerInfo.

trtexec writes these files by string concatenation: layer and tensor names are not
JSON-escaped, so a name holding ``"`` or ``\\`` makes the file invalid JSON. Each reader
first tries a strict decode and, when that fails, salvages the file line by line (trtexec
writes one record or one key per line); a salvaged result is flagged ``salvaged=True``.
"""

from __future__ import annotations

import contextlib
import math
import operator
import re
from typing import Any

import msgspec
import numpy as np

from stepscope.errors import TraceFormatError
from stepscope.model.tensorrt import (
    EngineGraph,
    EngineLayer,
    IterationTimes,
    LayerProfile,
    LayerTime,
    TensorInfo,
)

_PROFILE_SUFFIX = re.compile(r" \[profile (\d+)\]$")


def _text(data: bytes, path: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def _decode(data: bytes) -> Any:
    try:
        return msgspec.json.decode(data)
    except (msgspec.DecodeError, UnicodeDecodeError, ValueError, RecursionError):
        return None


def _num(value: Any, path: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TraceFormatError(f"{path}: {what} is not a number ({str(value)[:40]!r})")
    return float(value)


def _cnum(text: str) -> float:
    """A number as C++ streams print it (``inf``, ``-nan`` included)."""
    t = text.strip().lower().lstrip("+")
    if t in ("nan", "-nan"):
        return math.nan
    return float(t)


def _layer_time(name: str, t: float, avg: float, med: float | None, pct: float) -> LayerTime:
    m = _PROFILE_SUFFIX.search(name)
    return LayerTime(
        name=name,
        time_ms=t,
        average_ms=avg,
        median_ms=med,
        percentage=pct,
        profile=int(m.group(1)) if m else 0,
    )


# ---- --exportProfile ----------------------------------------------------------------------

_NAME_OPEN = re.compile(r'\{\s*"name"\s*:\s*"')
_NAME_CLOSE = re.compile(r'"\s*,\s*$')
_PROFILE_REST = re.compile(
    r'"timeMs"\s*:\s*(?P<t>[^,}\s]+)\s*,'
    r'\s*"averageMs"\s*:\s*(?P<a>[^,}\s]+)\s*'
    r'(?:,\s*"medianMs"\s*:\s*(?P<m>[^,}\s]+)\s*)?'
    r',\s*"percentage"\s*:\s*(?P<p>[^,}\s]+)\s*\}'
)
_COUNT = re.compile(r'\{\s*"count"\s*:\s*(\d+)\s*\}')


def looks_like_profile(head: str) -> bool:
    s = head.lstrip()
    return s.startswith("[") and ('"count"' in head[:200] or '"timeMs"' in head)


def read_profile(data: bytes, path: str) -> LayerProfile:
    """``--exportProfile``: ``[{"count": N}, {name, timeMs, averageMs[, medianMs], percentage}]``.

    The leading ``{"count": N}`` element is optional metadata (profiled iterations).
    """
    doc = _decode(data)
    if doc is None:
        return _salvage_profile(_text(data, path), path)
    if not isinstance(doc, list):
        raise TraceFormatError(
            f"{path}: not a trtexec --exportProfile file (expected a JSON array)"
        )
    count: int | None = None
    layers: list[LayerTime] = []
    for i, el in enumerate(doc):
        if not isinstance(el, dict):
            raise TraceFormatError(f"{path}: element {i} of the profile is not an object")
        if "name" not in el and (i == 0 or "count" in el):  # leading metadata element
            if "count" in el:
                count = int(_num(el["count"], path, "count"))
            continue
        if "name" not in el or "timeMs" not in el:
            raise TraceFormatError(f"{path}: element {i} of the profile has no name/timeMs")
        med = el.get("medianMs")
        layers.append(
            _layer_time(
                str(el["name"]),
                _num(el["timeMs"], path, "timeMs"),
                _num(el.get("averageMs", 0.0), path, "averageMs"),
                None if med is None else _num(med, path, "medianMs"),
                _num(el.get("percentage", 0.0), path, "percentage"),
            )
        )
    return LayerProfile(path=path, count=count, layers=tuple(layers))


def _salvage_profile(text: str, path: str) -> LayerProfile:
    count: int | None = None
    layers: list[LayerTime] = []
    for line in text.split("\n"):
        # linear in the line: the name runs from the first '"name" : "' to the '"' before
        # the last '"timeMs"' (names may hold quotes; one record per line)
        o = _NAME_OPEN.search(line)
        k = line.rfind('"timeMs"')
        if o is not None and k > o.end():
            close = _NAME_CLOSE.search(line, o.end(), k)
            m = _PROFILE_REST.match(line, k)
            if close is not None and m is not None:
                with contextlib.suppress(ValueError):  # a number C++ never prints
                    layers.append(
                        _layer_time(
                            line[o.end() : close.start()],
                            _cnum(m.group("t")),
                            _cnum(m.group("a")),
                            None if m.group("m") is None else _cnum(m.group("m")),
                            _cnum(m.group("p")),
                        )
                    )
                continue
        c = _COUNT.search(line)
        if c and count is None:
            count = int(c.group(1))
    if not layers:
        raise TraceFormatError(f"{path}: not a trtexec --exportProfile file (no layer records)")
    return LayerProfile(path=path, count=count, layers=tuple(layers), salvaged=True)


# ---- --exportTimes --------------------------------------------------------------------------

_NAN = math.nan


class _Iteration(msgspec.Struct, gc=False):  # no GC tracking: 1M records decode 2x faster
    """One --exportTimes record: only the fields we use (8.x+ names and the 7.x spellings)."""

    startEnqMs: float = _NAN
    endEnqMs: float = _NAN
    startComputeMs: float = _NAN
    endComputeMs: float = _NAN
    h2dMs: float = _NAN
    computeMs: float = _NAN
    d2hMs: float = _NAN
    latencyMs: float = _NAN
    inMs: float = _NAN  # 7.x
    outMs: float = _NAN  # 7.x


_TIME_LINE = re.compile(r'"(\w+)"\s*:\s*([-+0-9.eEinfatyINFATY]+)')


def looks_like_times(head: str) -> bool:
    return head.lstrip().startswith("[") and '"startEnqMs"' in head[:400]


# ms: beyond this (~31 years) a time is corrupt, read as missing like trtexec's inf and nan;
# kept, values near float's maximum overflow every sum and mean taken of them
MAX_MS = 1e12


def _column(recs: list[_Iteration], field: str) -> np.ndarray[Any, np.dtype[np.float64]]:
    out = np.fromiter(map(operator.attrgetter(field), recs), dtype=np.float64, count=len(recs))
    out[np.abs(out) > MAX_MS] = np.nan
    return out


def read_times(data: bytes, path: str) -> IterationTimes:
    """``--exportTimes``: one object per timed iteration (absolute and derived ms)."""
    try:
        recs = msgspec.json.decode(data, type=list[_Iteration])
    except (msgspec.DecodeError, UnicodeDecodeError, ValueError, RecursionError):
        recs = _salvage_times(data, path)  # C++ may print inf/nan, or the file is cut
    if not recs:
        raise TraceFormatError(f"{path}: the --exportTimes file holds no iterations")
    cols = {f: _column(recs, f) for f in _Iteration.__struct_fields__}
    if np.isnan(cols["computeMs"]).all():
        if any(r.computeMs == r.computeMs for r in recs):  # present, but none usable
            raise TraceFormatError(f"{path}: no usable computeMs in the --exportTimes file "
                                   f"(every value is infinite or beyond {MAX_MS:.0e} ms)")
        raise TraceFormatError(f"{path}: not a trtexec --exportTimes file (no computeMs)")
    h2d = np.where(np.isnan(cols["h2dMs"]), cols["inMs"], cols["h2dMs"])
    d2h = np.where(np.isnan(cols["d2hMs"]), cols["outMs"], cols["d2hMs"])
    latency = cols["latencyMs"]
    if np.isnan(latency).all():
        latency = np.nan_to_num(h2d) + cols["computeMs"] + np.nan_to_num(d2h)
    return IterationTimes(
        path=path,
        start_enq=cols["startEnqMs"],
        end_enq=cols["endEnqMs"],
        h2d=h2d,
        compute=cols["computeMs"],
        d2h=d2h,
        latency=latency,
        start_compute=cols["startComputeMs"],
        end_compute=cols["endComputeMs"],
    )


def _salvage_times(data: bytes, path: str) -> list[_Iteration]:
    if not data.lstrip()[:1] == b"[":
        raise TraceFormatError(f"{path}: not a trtexec --exportTimes file (expected a JSON array)")
    fields = set(_Iteration.__struct_fields__)
    recs = []
    for line in _text(data, path).split("\n"):
        rec: dict[str, float] = {}
        for k, v in _TIME_LINE.findall(line):
            if k in fields:
                try:
                    rec[k] = _cnum(v)
                except ValueError:
                    continue
        if rec:
            recs.append(_Iteration(**rec))
    return recs


# ---- --exportLayerInfo ---------------------------------------------------------------------

# Long 8.x prose and short 10.x names -> one precision label. Checked in this order.
_DTYPES = (
    ("bfloat16", "BF16"),
    ("bf16", "BF16"),
    ("fp16", "FP16"),
    ("half", "FP16"),
    ("fp32", "FP32"),
    ("float", "FP32"),
    ("fp8", "FP8"),
    ("e4m3", "FP8"),
    ("fp4", "FP4"),
    ("int8", "INT8"),
    ("int32", "INT32"),
    ("int64", "INT64"),
    ("int4", "INT4"),
    ("uint8", "UINT8"),
    ("bool", "BOOL"),
)


def dtype_of(fmt: str) -> str:
    """Normalised precision of a ``Format/Datatype`` text ("Row major linear FP32" -> FP32)."""
    low = fmt.lower()
    if "uint8" in low:
        return "UINT8"
    for token, label in _DTYPES:
        if token in low:
            return label
    return "?"


def looks_like_layer_info(head: str) -> bool:
    return head.lstrip().startswith("{") and '"Layers"' in head[:200]


def _tensor(obj: Any) -> TensorInfo:
    if not isinstance(obj, dict):
        return TensorInfo(name=str(obj), dtype="?", format="", dims=())
    fmt = str(obj.get("Format/Datatype", obj.get("Datatype", "")))
    dims_raw = obj.get("Dimensions", [])
    dims = (
        tuple(int(d) for d in dims_raw if isinstance(d, (int, float)) and not isinstance(d, bool))
        if isinstance(dims_raw, list)
        else ()
    )
    return TensorInfo(
        name=str(obj.get("Name", "")),
        dtype=dtype_of(fmt),
        format=fmt,
        dims=dims,
        location=str(obj.get("Location", "Device")),
    )


_KNOWN = {"Name", "LayerType", "Inputs", "Outputs", "TacticName", "TacticValue", "Metadata"}


def _compact(value: Any) -> str:
    if isinstance(value, str):
        return value
    return msgspec.json.encode(value).decode()


def _layer(obj: Any) -> EngineLayer:
    if isinstance(obj, str):
        return EngineLayer(name=obj, layer_type="")
    if not isinstance(obj, dict):
        return EngineLayer(name=str(obj), layer_type="")
    ins = obj.get("Inputs", [])
    outs = obj.get("Outputs", [])
    return EngineLayer(
        name=str(obj.get("Name", "")),
        layer_type=str(obj.get("LayerType", "")),
        inputs=tuple(_tensor(t) for t in ins) if isinstance(ins, list) else (),
        outputs=tuple(_tensor(t) for t in outs) if isinstance(outs, list) else (),
        tactic_name=str(obj.get("TacticName", "")),
        tactic_value=str(obj.get("TacticValue", "")),
        metadata=_compact(obj.get("Metadata", "")),
        extra=tuple((k, _compact(v)) for k, v in obj.items() if k not in _KNOWN),
    )


_KEY_STRING_LINE = re.compile(r'^(\s*(?:\{"Layers":\s*\[\{)?\s*"[^"]+"\s*:\s*")(.*)("\s*,?\s*)$')


_CONTROL = re.compile(r"[\x00-\x1f]")  # raw control characters (TRT 10 joins Metadata with \x1f)


def _repair_detailed(text: str) -> str:
    """Re-escape the string value of every ``"Key": "value"`` line (one key per line)."""
    out = []
    for line in text.split("\n"):
        m = _KEY_STRING_LINE.match(line)
        if m:
            value = m.group(2).replace("\\", "\\\\").replace('"', '\\"')
            value = _CONTROL.sub(lambda c: f"\\u{ord(c.group()):04x}", value)
            line = m.group(1) + value + m.group(3)
        out.append(line)
    return "\n".join(out)


def _salvage_names(text: str) -> tuple[list[str], list[str]]:
    layers: list[str] = []
    bindings: list[str] = []
    target = layers
    for line in text.split("\n"):
        s = line.strip()
        if '"Bindings"' in s[:14]:
            target = bindings
            s = s.partition(":")[2].strip().lstrip("[")  # a damaged line may lack the colon
        elif s.startswith('{"Layers"'):
            s = s.partition(":")[2].strip().lstrip("[")
        s = s.lstrip(",").strip()
        if s.endswith("]}") or s.endswith("],"):
            s = s[:-2].rstrip()
        if len(s) >= 2 and s[0] == '"' and s[-1] == '"':
            target.append(s[1:-1])
    return layers, bindings


def read_layer_info(data: bytes, path: str) -> EngineGraph:
    """``--exportLayerInfo``: ``{"Layers": [...], "Bindings": [...]}``, names-only or detailed."""
    doc = _decode(data)
    salvaged = False
    if doc is None:
        text = _text(data, path)
        doc = _decode(_repair_detailed(text).encode("utf-8", "surrogatepass"))
        salvaged = True
        if doc is None:
            names, bindings = _salvage_names(text)
            if not names:
                raise TraceFormatError(
                    f"{path}: not a trtexec --exportLayerInfo file (invalid JSON, no layer names)"
                )
            return EngineGraph(
                path=path,
                layers=tuple(EngineLayer(n, "") for n in names),
                bindings=tuple(bindings),
                detailed=False,
                salvaged=True,
            )
    if not isinstance(doc, dict) or not isinstance(doc.get("Layers"), list):
        raise TraceFormatError(f'{path}: not a trtexec --exportLayerInfo file (no "Layers" list)')
    raw = doc["Layers"]
    bindings = doc.get("Bindings", [])
    layers = tuple(_layer(x) for x in raw)
    detailed = any(isinstance(x, dict) for x in raw)
    return EngineGraph(
        path=path,
        layers=layers,
        bindings=tuple(str(b) for b in bindings) if isinstance(bindings, list) else (),
        detailed=detailed,
        salvaged=salvaged,
    )
