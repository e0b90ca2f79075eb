"""The regression gate: ``--fail-on`` expressions evaluated against a Diff.

Grammar (docs/diff.md, "Gate")::

    EXPR   := METRIC OP VALUE
    METRIC := step_time | category:NAME | kernel:NAME | op:NAME | gpu:NAME[@DEVICE] | findings:new
    OP     := > | >= | < | <=
    VALUE  := [+|-]NUMBER[% | us | µs | ms | s]

``%`` compares the relative change; a unit (or none: µs, GPU points, a count) the absolute
change per step. A threshold is broken when the change crosses it **and** is not within
noise: a metric with per-step samples must also be significant (significance.py).
"""

from __future__ import annotations

import fnmatch
import math
import operator
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from stepscope.analysis.compare.diff import GPU_METRICS, Change, Diff, ItemChange, normalise
from stepscope.analysis.compare.significance import compare_samples
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.errors import UsageError
from stepscope.units import count, format_us

_EXPR = re.compile(
    r"^\s*(?P<metric>.+?)\s*(?P<op>>=|<=|>|<)\s*"
    r"(?P<value>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<unit>%|us|µs|ms|s)?\s*$"
)
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
}
_SCALE = {"us": 1.0, "µs": 1.0, "ms": 1000.0, "s": 1e6}


@dataclass(frozen=True)
class Threshold:
    text: str
    metric: str
    op: str
    value: float  # in % when relative, else µs / points / count
    relative: bool


@dataclass(frozen=True)
class GateResult:
    threshold: Threshold
    crossed: bool  # the change is past the threshold
    significant: bool | None  # None: no per-step samples, noise not checked
    broken: bool  # crossed and not within noise
    reason: str  # one line


def parse(text: str) -> Threshold:
    m = _EXPR.match(text)
    if not m:
        raise UsageError(
            f"--fail-on {text!r}: expected METRIC OP VALUE, e.g. 'step_time>+5%' or "
            "'kernel:aten::mm>+200us'"
        )
    metric = m["metric"].strip()
    unit = m["unit"] or ""
    value = float(m["value"])
    if unit in _SCALE:
        value *= _SCALE[unit]
    head = metric.split(":", 1)[0]
    if head not in ("step_time", "category", "kernel", "op", "operator", "gpu", "findings"):
        raise UsageError(
            f"--fail-on {text!r}: unknown metric {metric!r} (step_time, category:NAME, "
            "kernel:NAME, op:NAME, gpu:NAME, findings:new)"
        )
    if head != "step_time" and ":" not in metric:
        raise UsageError(f"--fail-on {text!r}: {head} needs a name, e.g. {head}:NAME")
    return Threshold(text.strip(), metric, m["op"], value, unit == "%")


def _sig_text(ch: Change) -> str:
    s = ch.significance
    if s is None:
        return "noise not checked (no per-step samples)"
    if s.significant is None:
        return f"noise not checked ({count(min(s.n_base, s.n_new), 'step')} in a run; 3 needed)"
    state = "significant" if s.significant else "within noise"
    return f"{state} (p={s.p_value:.3g}, step-to-step spread {format_us(s.noise)})"


def _items(rows: Sequence[ItemChange], name: str) -> list[ItemChange]:
    want = normalise(name)
    if any(ch in name for ch in "*?["):
        return [r for r in rows if fnmatch.fnmatchcase(r.name, want)]
    return [r for r in rows if r.name == want]


def _sum(rows: Sequence[ItemChange], alpha: float) -> Change:
    """Several matched rows as one metric; per-step samples are summed when all have them."""
    if len(rows) == 1:
        return rows[0].change
    sig = None
    if all(r.samples is not None for r in rows):
        base = np.sum([r.samples[0] for r in rows if r.samples is not None], axis=0)
        new = np.sum([r.samples[1] for r in rows if r.samples is not None], axis=0)
        sig = compare_samples(base, new, alpha=alpha)
    return Change(sum(r.change.base for r in rows), sum(r.change.new for r in rows), sig)


def _resolve(diff: Diff, t: Threshold) -> tuple[Change, str, str]:
    """The Change a metric names, its label, and its unit kind ("us" | "pt" | "n")."""
    head, _, arg = t.metric.partition(":")
    if head == "step_time":
        return diff.step, "step time", "us"
    if head == "category":
        for c in diff.categories:
            if c.name == arg:
                return c.change, f"{arg} time per step", "us"
        raise UsageError(
            f"--fail-on {t.text!r}: unknown category {arg!r} ({', '.join(CATEGORIES)})"
        )
    if head == "kernel":
        rows = _items(diff.kernels, arg) or _items(
            [o for o in diff.operators if o.metric == "device"], arg
        )
        if rows:
            return _sum(rows, diff.alpha), f"GPU time of {arg} per step", "us"
        raise UsageError(f"--fail-on {t.text!r}: no kernel or operator {arg!r} in either run")
    if head in ("op", "operator"):
        rows = _items(diff.operators, arg)
        if rows:
            return _sum(rows, diff.alpha), f"{arg} per step", "us"
        raise UsageError(f"--fail-on {t.text!r}: no operator {arg!r} in either run")
    if head == "gpu":
        metric, _, dev = arg.partition("@")
        if metric not in GPU_METRICS:
            raise UsageError(f"--fail-on {t.text!r}: unknown GPU metric ({', '.join(GPU_METRICS)})")
        for g in diff.gpu:
            if g.metric == metric and (not dev or g.device == dev):
                if g.base is None or g.new is None:
                    raise UsageError(f"--fail-on {t.text!r}: {metric} is not measured in both runs")
                return Change(g.base, g.new), f"GPU {g.device} {metric}", "pt"
        raise UsageError(f"--fail-on {t.text!r}: no GPU metrics in these runs")
    if head == "findings" and arg == "new":
        n = sum(1 for f in diff.findings if f.status == "new")
        return Change(0.0, float(n)), "new findings", "n"
    raise UsageError(f"--fail-on {t.text!r}: unknown metric {t.metric!r}")


def evaluate(diff: Diff, thresholds: Sequence[Threshold]) -> list[GateResult]:
    out = []
    for t in thresholds:
        ch, label, kind = _resolve(diff, t)
        if t.relative:
            x = ch.pct
            if x is None:
                x = 0.0 if ch.new == 0 else math.copysign(math.inf, ch.new)
        else:
            x = ch.delta
        crossed = _OPS[t.op](x, t.value)
        sig = ch.significant
        broken = crossed and sig is not False
        if kind == "us":
            values = f"{format_us(ch.base)} -> {format_us(ch.new)}"
            change = (
                f"{ch.delta:+,.1f} µs" if abs(ch.delta) < 1000 else f"{ch.delta / 1000:+,.2f} ms"
            )
        else:
            values = f"{ch.base:g} -> {ch.new:g}"
            change = f"{ch.delta:+.2f}" + (" points" if kind == "pt" else "")
        pct = "" if ch.pct is None else f" ({ch.pct:+.1f} %)"
        reason = f"{t.text}: {label} {change}{pct}, {values}"
        if kind == "us":
            reason += f", {_sig_text(ch)}"
        out.append(GateResult(t, crossed, sig, broken, reason))
    return out
