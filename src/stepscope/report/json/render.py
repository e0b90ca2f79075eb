"""JSON output: one object, stable keys (see docs/report-json.md)."""

from __future__ import annotations

from typing import Any

import msgspec

from stepscope.report.build import Report


def render_json(report: Report) -> str:
    return msgspec.json.format(msgspec.json.encode(report.to_json()), indent=2).decode()


def strict_json(data: Any) -> str:
    """``data`` as indented JSON that every parser reads: NaN and infinities become null
    (``json.dumps`` writes ``NaN``/``Infinity``, which strict parsers and ``jq`` refuse)."""
    return msgspec.json.format(msgspec.json.encode(data), indent=1).decode()
