"""``stepscope diff --format json``: the ``stepscope.diff/1`` contract (docs/diff-json.md)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from stepscope.analysis.compare.diff import Change, Diff, ItemChange, SideInfo, noise_verdict
from stepscope.analysis.compare.gate import GateResult
from stepscope.analysis.compare.significance import Significance
from stepscope.report.json.rounding import r

SCHEMA = "stepscope.diff/1"


def _r(x: float | None, nd: int = 3) -> float | None:  # µs to the ns
    return r(x, nd)


def _sig(s: Significance | None) -> dict[str, Any] | None:
    if s is None:
        return None
    return {
        "n_base": s.n_base,
        "n_new": s.n_new,
        "test": s.test,
        "p_value": _r(s.p_value, 6),
        "ci95_delta_us": None if s.ci_low is None else [_r(s.ci_low), _r(s.ci_high)],
        "noise_us": _r(s.noise),
        "delta_median_us": _r(s.delta_median),
        "significant": s.significant,
    }


def _change(c: Change) -> dict[str, Any]:
    return {
        "base_us": _r(c.base),
        "new_us": _r(c.new),
        "delta_us": _r(c.delta),
        "delta_pct": _r(c.pct, 2),
        "significance": _sig(c.significance),
    }


def _item(i: ItemChange, alpha: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": i.name,
        "status": i.status,
        "metric": i.metric,
        "calls_base": i.calls_base,
        "calls_new": i.calls_new,
        **_change(i.change),
        "share_of_step_change_pct": _r(i.share_pct, 2),
        "noise_verdict": noise_verdict(i.change, alpha),
    }
    if i.shape is not None:
        out["input_shape"] = i.shape
    return out


def _side(s: SideInfo) -> dict[str, Any]:
    return {
        "path": s.label,
        "kind": s.kind,
        "steps": s.steps,
        "complete_tables": s.complete,
        "ranks": s.ranks,
    }


def diff_to_json(diff: Diff, gate: Sequence[GateResult] = ()) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "base": _side(diff.base),
        "new": _side(diff.new),
        "alpha": diff.alpha,
        "step_time": {**_change(diff.step), "verdict": diff.verdict,
                      "noise_verdict": noise_verdict(diff.step, diff.alpha)},
        "main_change": diff.main_change,
        "categories": [
            {"name": c.name, **_change(c.change), "share_of_step_change_pct": _r(c.share_pct, 2),
             "noise_verdict": noise_verdict(c.change, diff.alpha)}
            for c in diff.categories
        ],
        "operators": [_item(i, diff.alpha) for i in diff.operators],
        "operators_by_shape": [_item(i, diff.alpha) for i in diff.operators_by_shape],
        "kernels": [_item(i, diff.alpha) for i in diff.kernels],
        "findings": [
            {
                "id": f.id,
                "title": f.title,
                "status": f.status,
                "base_saving_us": _r(f.base_saving_us),
                "new_saving_us": _r(f.new_saving_us),
            }
            for f in diff.findings
        ],
        "gpu": [
            {
                "device": g.device,
                "metric": g.metric,
                "base": _r(g.base, 2),
                "new": _r(g.new, 2),
                "delta": _r(g.delta, 2),
            }
            for g in diff.gpu
        ],
        "gate": [
            {
                "expression": g.threshold.text,
                "crossed": g.crossed,
                "significant": g.significant,
                "broken": g.broken,
                "reason": g.reason,
            }
            for g in gate
        ],
        "passed": not any(g.broken for g in gate),
        "warnings": list(diff.warnings),
    }


def render_diff_json(diff: Diff, gate: Sequence[GateResult] = ()) -> str:
    return msgspec.json.format(msgspec.json.encode(diff_to_json(diff, gate)), indent=2).decode()
