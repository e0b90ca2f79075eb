"""Compare two TensorRT engines (e.g. FP16 vs INT8 builds of one model): layer latencies,
precisions and fused groups side by side. A pure function over two TrtAnalysis results.

Layers are matched by name (``[profile k]`` suffix ignored). Fused groups are compared
through the network nodes a layer name lists (``a + b + PWN(c, d)``): a layer of B holding
nodes that A ran in two or more layers is a fusion B gained (and the reverse).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stepscope.analysis.tensorrt.engine import LayerRow, TrtAnalysis, base_layer_name
from stepscope.analysis.tensorrt.names import pwn_leaves, split_top
from stepscope.units import round_finite


@dataclass(frozen=True)
class LayerDelta:
    name: str
    a_ms: float | None
    b_ms: float | None
    a_precision: str | None
    b_precision: str | None
    a_type: str
    b_type: str
    a_tactic: str
    b_tactic: str

    @property
    def delta_ms(self) -> float:
        return (self.b_ms or 0.0) - (self.a_ms or 0.0)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "a_ms": _r(self.a_ms),
            "b_ms": _r(self.b_ms),
            "delta_ms": _r(self.delta_ms),
            "a_precision": self.a_precision,
            "b_precision": self.b_precision,
            "a_type": self.a_type,
            "b_type": self.b_type,
            "a_tactic": self.a_tactic,
            "b_tactic": self.b_tactic,
        }


@dataclass(frozen=True)
class FusionChange:
    """``layer`` of engine ``side`` runs nodes that the other engine ran as ``others``."""

    side: str  # "a" or "b": the engine that fuses more
    layer: str
    layer_ms: float | None
    others: tuple[str, ...]
    others_ms: float

    def to_json(self) -> dict[str, Any]:
        return {
            "fused_in": self.side,
            "layer": self.layer,
            "layer_ms": _r(self.layer_ms),
            "split_layers": list(self.others),
            "split_ms": _r(self.others_ms),
        }


@dataclass(frozen=True)
class SideBySide:
    key: str
    a_ms: float
    b_ms: float
    a_pct: float
    b_pct: float

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "a_ms": _r(self.a_ms),
            "b_ms": _r(self.b_ms),
            "a_pct": round(self.a_pct, 2),
            "b_pct": round(self.b_pct, 2),
        }


@dataclass(frozen=True)
class EngineComparison:
    a_name: str
    b_name: str
    a_precision: str | None
    b_precision: str | None
    a_layers: int
    b_layers: int
    a_layer_total_ms: float
    b_layer_total_ms: float
    a_inference_ms: float | None
    b_inference_ms: float | None
    a_throughput_qps: float | None
    b_throughput_qps: float | None
    matched: tuple[LayerDelta, ...]  # by |delta| descending
    only_a: tuple[LayerDelta, ...]
    only_b: tuple[LayerDelta, ...]
    fusions: tuple[FusionChange, ...]
    precision_mix: tuple[SideBySide, ...]
    by_type: tuple[SideBySide, ...]

    @property
    def speedup(self) -> float | None:
        """a / b per-inference time (> 1: B is faster)."""
        a = self.a_inference_ms
        b = self.b_inference_ms
        return a / b if a and b else None

    def to_json(self) -> dict[str, Any]:
        return {
            "a": {
                "engine": self.a_name,
                "precision": self.a_precision,
                "layers": self.a_layers,
                "layer_total_ms": _r(self.a_layer_total_ms),
                "inference_ms": _r(self.a_inference_ms),
                "throughput_qps": _r(self.a_throughput_qps),
            },
            "b": {
                "engine": self.b_name,
                "precision": self.b_precision,
                "layers": self.b_layers,
                "layer_total_ms": _r(self.b_layer_total_ms),
                "inference_ms": _r(self.b_inference_ms),
                "throughput_qps": _r(self.b_throughput_qps),
            },
            "speedup": _r(self.speedup),
            "matched_layers": [d.to_json() for d in self.matched],
            "only_a": [d.to_json() for d in self.only_a],
            "only_b": [d.to_json() for d in self.only_b],
            "fusions": [f.to_json() for f in self.fusions],
            "precision_mix": [s.to_json() for s in self.precision_mix],
            "by_type": [s.to_json() for s in self.by_type],
        }


def _r(x: float | None, nd: int = 6) -> float | None:
    return round_finite(x, nd)


def layer_nodes(name: str) -> tuple[str, ...]:
    """Network nodes a layer name lists: ``w + Conv_1 + PWN(Clip_2)`` -> (w, Conv_1, Clip_2)."""
    out: list[str] = []
    for part in split_top(base_layer_name(name), " + "):
        out.extend(pwn_leaves(part) if part.startswith("PWN(") else [part])
    return tuple(out)


def _nodes(r: LayerRow) -> tuple[str, ...]:
    """ONNX nodes from the layer info's Metadata when present, else those the name lists.

    A reformat runs no network node: its name quotes the layer it feeds ("Reformatting
    CopyNode for Input Tensor 0 to conv + relu"), and reading nodes out of that would make
    the reformat own half of that layer's nodes and fake a fusion in identical engines.
    """
    if r.is_reformat:
        return ()
    return r.onnx_nodes or layer_nodes(r.name)


def _delta(name: str, ra: LayerRow | None, rb: LayerRow | None) -> LayerDelta:
    return LayerDelta(
        name=name,
        a_ms=ra.average_ms if ra else None,
        b_ms=rb.average_ms if rb else None,
        a_precision=ra.precision if ra else None,
        b_precision=rb.precision if rb else None,
        a_type=ra.layer_type if ra else "",
        b_type=rb.layer_type if rb else "",
        a_tactic=ra.tactic if ra else "",
        b_tactic=rb.tactic if rb else "",
    )


def _fusions(
    side: str, mine: tuple[LayerRow, ...], theirs: tuple[LayerRow, ...]
) -> list[FusionChange]:
    owner: dict[str, LayerRow] = {}
    for r in theirs:
        for n in _nodes(r):
            owner.setdefault(n, r)
    out: list[FusionChange] = []
    for r in mine:
        others: dict[str, LayerRow] = {}
        for n in _nodes(r):
            o = owner.get(n)
            if o is not None:
                others.setdefault(o.name, o)
        if len(others) >= 2:
            out.append(
                FusionChange(
                    side,
                    r.name,
                    r.average_ms,
                    tuple(others),
                    sum(o.average_ms or 0.0 for o in others.values()),
                )
            )
    return out


def _side_by_side(a: TrtAnalysis, b: TrtAnalysis, attr: str) -> tuple[SideBySide, ...]:
    sa = {s.key: s for s in getattr(a, attr)}
    sb = {s.key: s for s in getattr(b, attr)}
    rows = []
    for k in dict.fromkeys(list(sa) + list(sb)):
        x, y = sa.get(k), sb.get(k)
        rows.append(
            SideBySide(
                k,
                x.average_ms if x else 0.0,
                y.average_ms if y else 0.0,
                x.share_pct if x else 0.0,
                y.share_pct if y else 0.0,
            )
        )
    return tuple(sorted(rows, key=lambda s: (-max(s.a_ms, s.b_ms), s.key)))


def _by_nodes(rows: dict[str, LayerRow]) -> dict[frozenset[str], str]:
    """ONNX-node set -> layer name, for sets that belong to exactly one layer."""
    seen: dict[frozenset[str], list[str]] = {}
    for n, r in rows.items():
        if r.onnx_nodes:
            seen.setdefault(frozenset(r.onnx_nodes), []).append(n)
    return {k: v[0] for k, v in seen.items() if len(v) == 1}


def compare_engines(a: TrtAnalysis, b: TrtAnalysis) -> EngineComparison:
    """Side-by-side comparison of engine ``a`` (baseline) and engine ``b``."""
    ia = {base_layer_name(r.name): r for r in a.layers}
    ib = {base_layer_name(r.name): r for r in b.layers}
    matched = [_delta(n, ia[n], ib[n]) for n in ia if n in ib]
    # TRT 10 renames Myelin layers between builds (``..._myl3_7``): pair the rest by the
    # ONNX nodes their Metadata lists when those are identical and unique.
    rest_a = _by_nodes({n: r for n, r in ia.items() if n not in ib})
    rest_b = _by_nodes({n: r for n, r in ib.items() if n not in ia})
    paired: dict[str, str] = {rest_a[k]: rest_b[k] for k in rest_a.keys() & rest_b.keys()}
    for na, nb in paired.items():
        matched.append(_delta(na if na == nb else f"{na} ⇄ {nb}", ia[na], ib[nb]))
    paired_b = set(paired.values())
    # equal changes (identical engines: all zero): the slower layers first
    matched.sort(key=lambda d: (-abs(d.delta_ms), -max(d.a_ms or 0.0, d.b_ms or 0.0), d.name))
    only_a = sorted(
        (_delta(n, ia[n], None) for n in ia if n not in ib and n not in paired),
        key=lambda d: (-(d.a_ms or 0.0), d.name),
    )
    only_b = sorted(
        (_delta(n, None, ib[n]) for n in ib if n not in ia and n not in paired_b),
        key=lambda d: (-(d.b_ms or 0.0), d.name),
    )
    fusions = _fusions("b", b.layers, a.layers) + _fusions("a", a.layers, b.layers)
    fusions.sort(key=lambda f: (-f.others_ms, f.layer))
    return EngineComparison(
        a_name=a.run.name,
        b_name=b.run.name,
        a_precision=a.engine_precision,
        b_precision=b.engine_precision,
        a_layers=len(a.layers),
        b_layers=len(b.layers),
        a_layer_total_ms=a.layer_total_ms,
        b_layer_total_ms=b.layer_total_ms,
        a_inference_ms=a.inference_ms,
        b_inference_ms=b.inference_ms,
        a_throughput_qps=a.summary.throughput_qps if a.summary else None,
        b_throughput_qps=b.summary.throughput_qps if b.summary else None,
        matched=tuple(matched),
        only_a=tuple(only_a),
        only_b=tuple(only_b),
        fusions=tuple(fusions),
        precision_mix=_side_by_side(a, b, "precision_mix"),
        by_type=_side_by_side(a, b, "by_type"),
    )
