"""JSON output: one object, stable keys (see docs/report-json.md)."""

from __future__ import annotations

import msgspec

from stepscope.report.build import Report


def render_json(report: Report) -> str:
    return msgspec.json.format(msgspec.json.encode(report.to_json()), indent=2).decode()
