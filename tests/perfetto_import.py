"""What Perfetto's JSON importer would load from a Chrome trace: a test oracle.

Perfetto UI opens JSON traces with its trace processor, whose JSON importer
(``src/trace_processor/importers/json/`` in google/perfetto: the tokenizer, then the parser)
accepts less than the Chrome trace format allows, in ways that fail silently. This module
restates those rules in Python, as read in the importer's source, so that a test can say
"Perfetto opens this export with the same content" without a browser or a network:

Tokenizer (per event, on the JSON text):
- it looks up ``ts``, ``dur`` and, when ``ts`` is missing, ``ph`` by scanning the event's
  keys in order, and *fails the whole file* ("unsupported JSON dictionary with array") on a
  top-level key whose value is an array met before the key it looks for;
- an event without ``ts`` is dropped unless it is metadata (``ph`` "M");
- ``displayTimeUnit``: earlier versions read every timestamp in that unit when it is
  "ns" or "ms" (their unit test pins ``CoerceToTs(kMs, 42) == 42000000``); newer ones ignore
  it. A document that must mean the same to every version carries no ``displayTimeUnit``.

Parser (per event):
- ``X`` needs ``dur``; ``C`` needs an object ``args`` whose values are numbers (or numeric
  strings), one counter track per arg named ``"<name> <arg>"``; ``s``/``t``/``f`` need a
  numeric (or hex-string) ``id`` and are matched on (id, cat, name); ``f`` binds to the
  slice enclosing it when ``bp`` is "e", otherwise to the next slice; ``s`` binds to the
  slice open on its track; ``i`` with scope "t" needs a tid; ``M`` process_name /
  thread_name need ``args.name``;
- a string pid or tid is interned as a name (allowed, a "quick-and-dirty" form);
- times: a number of µs becomes ``int(value * 1000)`` ns (truncated).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import msgspec

PHASES = set("BEXCMsftiIRben")


@dataclass
class Loaded:
    """What the importer keeps, and every event it would refuse (with the reason)."""

    fatal: str | None = None  # the whole file fails to load
    time_unit: str | None = None  # displayTimeUnit: some versions rescale every ts by it
    refused: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # (pid, tid, name, ts ns, dur ns)
    slices: list[tuple[str, str, str, int, int]] = field(default_factory=list)
    counters: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    instants: list[tuple[str, str, str, int]] = field(default_factory=list)
    flows_bound: int = 0  # flows with both ends on a slice
    flows_unbound: int = 0
    names: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, id) -> name


def _ns(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value * 1000
    if isinstance(value, float):
        return int(value * 1000)
    if isinstance(value, str):
        try:
            return int(float(value) * 1000)
        except ValueError:
            return None
    return None


def _flow_id(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


def _scan_error(event: dict[str, Any], key: str) -> bool:
    """The tokenizer's key scan for ``key`` meets an array-valued key first."""
    for k, v in event.items():  # decoded dicts keep the text's key order
        if k == key:
            return False
        if isinstance(v, list):
            return True
    return False


def load(data: bytes) -> Loaded:
    """What the importer would load from ``data`` (a JSON document)."""
    out = Loaded()
    doc = msgspec.json.decode(data)
    if isinstance(doc, dict):
        unit = doc.get("displayTimeUnit")
        out.time_unit = unit if isinstance(unit, str) else None
        events = doc.get("traceEvents", [])
    else:
        events = doc
    open_flows: dict[tuple[int, str, str], tuple[str, str, int]] = {}
    flow_ends: list[tuple[tuple[str, str, int], tuple[str, str, int, bool]]] = []
    for ev in events:
        if not isinstance(ev, dict):
            out.fatal = "an element of traceEvents is not an object"
            return out
        for key in ("ts", "dur") + (("ph",) if "ts" not in ev else ()):
            if _scan_error(ev, key):
                out.fatal = f"array-valued key before {key!r} in {ev}"
                return out
        ph = ev.get("ph")
        ts = _ns(ev.get("ts"))
        if ts is None and ph != "M":
            out.refused.append(("no ts", ev))
            continue
        if not isinstance(ph, str) or not ph or ph[0] not in PHASES:
            out.refused.append(("phase", ev))
            continue
        pid = str(ev.get("pid", 0))
        tid = str(ev.get("tid", pid))
        name = str(ev.get("name", ""))
        cat = str(ev.get("cat", ""))
        if ph == "X":
            dur = _ns(ev.get("dur"))
            if dur is None:
                out.refused.append(("X without dur", ev))
                continue
            out.slices.append((pid, tid, name, int(ts or 0), dur))
        elif ph == "C":
            args = ev.get("args")
            if not isinstance(args, dict):
                out.refused.append(("C without object args", ev))
                continue
            for k, v in args.items():
                num = v if isinstance(v, int | float) and not isinstance(v, bool) else None
                if isinstance(v, str):
                    try:
                        num = float(v)
                    except ValueError:
                        num = None
                if num is None:
                    out.refused.append(("C with a non-numeric arg", ev))
                    continue
                out.counters.setdefault(f"{name} {k}", []).append((int(ts or 0), float(num)))
        elif ph in ("s", "f", "t"):
            fid = _flow_id(ev.get("id"))
            if fid is None:
                out.refused.append(("flow without id", ev))
                continue
            if ph == "s":
                open_flows[(fid, cat, name)] = (pid, tid, int(ts or 0))
            elif ph == "f":
                start = open_flows.pop((fid, cat, name), None)
                if start is None:
                    out.flows_unbound += 1
                else:
                    flow_ends.append((start, (pid, tid, int(ts or 0), ev.get("bp") == "e")))
        elif ph in ("i", "I", "R"):
            scope = ev.get("s", "t")
            if scope not in ("g", "p", "t"):
                out.refused.append(("instant scope", ev))
                continue
            out.instants.append((pid, tid, name, int(ts or 0)))
        elif ph == "M":
            arg = (ev.get("args") or {}).get("name")
            if name in ("process_name", "thread_name") and isinstance(arg, str):
                out.names[(name, pid if name == "process_name" else f"{pid}/{tid}")] = arg
    out.flows_unbound += len(open_flows)
    by_track: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for pid, tid, _, ts, dur in out.slices:
        by_track[(pid, tid)].append((ts, ts + dur))
    for (spid, stid, sts), (fpid, ftid, fts, enclosing) in flow_ends:
        begin = any(a <= sts <= b for a, b in by_track[(spid, stid)])
        end = any((a <= fts <= b) if enclosing else a >= fts for a, b in by_track[(fpid, ftid)])
        if begin and end:
            out.flows_bound += 1
        else:
            out.flows_unbound += 1
    return out
