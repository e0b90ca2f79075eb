"""Per-event repair of fields written with the wrong JSON type (the slow path).

Only chunks whose typed decode fails come here. Real producers write numbers as strings
(roctracer: ``"bytes": "128"``), floats where integers are expected, or ``null`` for a
missing value. One odd field never costs its event: the value is coerced when it can be
(``"128"`` -> 128, ``"0x10"`` -> 16, ``2.7`` -> 2) and otherwise dropped, as if the producer
had not written it. Each repair is counted per field and reported as a warning.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

import msgspec

from stepscope.formats.kineto.schema import Event

_EVENT = msgspec.json.Decoder(Event)
_PATH = re.compile(r"at `\$([^`]*)`")
_EXPECTED = re.compile(r"Expected `([^`]+)`")
MAX_REPAIRS = 16  # per event; more than this is not a trace event


def _number(text: str) -> int | float | None:
    t = text.strip()
    try:
        return int(t, 0)
    except ValueError:
        pass
    try:
        value = float(t)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _coerce(value: Any, expected: str) -> tuple[bool, Any, str]:
    """(keep, new value, what was done) for a value of the wrong type."""
    wants_int = "int" in expected
    wants_float = "float" in expected
    if isinstance(value, str) and (wants_int or wants_float):
        num = _number(value)
        if num is not None:
            if wants_int and not wants_float:
                return True, int(num), "string -> integer"
            return True, float(num), "string -> number"
    if isinstance(value, float) and wants_int and math.isfinite(value):
        return True, int(value), "float -> integer"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and "str" in expected:
        return True, str(value), "number -> string"
    if value is None:
        return False, None, "null dropped"
    return False, None, "dropped (not a number)" if wants_int or wants_float else "dropped"


def _locate(item: Any, path: str) -> tuple[Any, str | int] | None:
    """The container holding the value at a msgspec error path, and its key.

    Keys may contain dots ("est. achieved occupancy %"), so each step matches the longest
    key of the current object that the rest of the path starts with.
    """
    node: Any = item
    rest = path
    key: str | int | None = None
    parent: Any = None
    while rest:
        parent = node
        if rest.startswith("["):
            close = rest.index("]")
            key = int(rest[1:close])
            rest = rest[close + 1 :]
        elif rest.startswith(".") and isinstance(node, dict):
            body = rest[1:]
            fits = [k for k in node if isinstance(k, str) and (
                body == k or body.startswith(k + ".") or body.startswith(k + "["))]
            if not fits:
                return None
            key = max(fits, key=len)
            rest = body[len(key):]
        else:
            return None
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            return None
    return (parent, key) if key is not None else None


def repair_event(item: Any, repairs: Counter[str]) -> Event | None:
    """Decode one generically-decoded event, repairing wrongly typed fields; None if hopeless."""
    if not isinstance(item, dict):
        return None
    for _ in range(MAX_REPAIRS):
        try:
            return _EVENT.decode(msgspec.json.encode(item))
        except (TypeError, OverflowError):
            return None
        except msgspec.ValidationError as exc:
            msg = str(exc)
            m = _PATH.search(msg)
            where = _locate(item, m.group(1)) if m else None
            if where is None:
                return None
            node, key = where
            e = _EXPECTED.search(msg)
            try:
                keep, value, what = _coerce(node[key], e.group(1) if e else "")
            except (KeyError, IndexError, TypeError):
                return None
            field = (m.group(1) if m else "").lstrip(".")
            repairs[f"{field}: {what}"] += 1
            if keep:
                node[key] = value
            elif isinstance(node, dict):
                del node[key]
            else:
                return None
    return None
