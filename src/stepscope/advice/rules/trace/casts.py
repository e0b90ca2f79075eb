"""Rule: mixed-precision casts made inside operators (autocast's) take a large share.

Under ``torch.autocast`` every operator on autocast's lower-precision list (matmul, linear,
bmm, convolution, …) casts its float32 inputs to fp16/bf16, and every operator on its
float32 list (layer_norm, softmax, pow, …) casts lower-precision inputs back to float32.
PyTorch's dispatcher records each cast as an ``aten::to`` called by that operator (its
child in the trace), with the target dtype among its ``Concrete Inputs`` (record_shapes).
Between an fp32-list operator and the next matmul the same activation is cast on every
call; in inference, where weights need not stay float32, casting the model once removes
every one of them. materialising-copies leaves these copies out (they are inside other
operators): this rule sizes them.

Premises, each read from the trace: the cast is an ``aten::to``/``aten::_to_copy`` called by
an operator of autocast's lists (names.AUTOCAST_LOWER_PRECISION_OPS casting float32 down to
fp16/bf16, names.AUTOCAST_FP32_OPS casting fp16/bf16 up; dtype codes: c10/core/ScalarType.h);
at least one float32 input is cast down by a matmul or convolution (no operator does that
by itself: autocast is on; an fp16 model's own upcasts, as rms_norm's, are not counted);
the target dtype is recorded (without ``Concrete Inputs`` the rule stays silent); the run
has a backward pass or not (training keeps autocast, inference can drop it).
"""

from __future__ import annotations

import msgspec
import numpy as np
import numpy.typing as npt

from stepscope.advice.context import Context, fmt_ns, short
from stepscope.advice.finding import Finding
from stepscope.analysis.events.links import gather
from stepscope.classify import names
from stepscope.units import count

THRESHOLD_PCT = 10.0  # of GPU kernel time in the steps (as materialising-copies)
CAST_OPS = frozenset({"aten::to", "aten::_to_copy"})
# c10::ScalarType codes (c10/core/ScalarType.h: Byte 0, Char 1, Short 2, Int 3, Long 4,
# Half 5, Float 6, Double 7, …, Bool 11, …, BFloat16 15) as Concrete Inputs writes them
LOW = {"5": "fp16", "15": "bf16"}
FLOAT = "6"
# Input type spellings of the same dtypes
TYPE_FLOAT = "float"
TYPE_LOW = {"c10::Half": "fp16", "c10::BFloat16": "bf16"}

CODE_INFERENCE_BF16 = """\
model = model.to(torch.bfloat16).eval()   # weights cast once, not in every forward
with torch.inference_mode():      # no autocast: every op runs in bf16
    out = model(x.to(torch.bfloat16))"""
CODE_INFERENCE_FP16 = """\
model = model.to(torch.float16).eval()    # weights cast once, not in every forward
with torch.inference_mode():      # no autocast: every op runs in fp16
    out = model(x.to(torch.float16))"""
CODE_TRAINING_BF16 = """\
model = torch.compile(model)    # fuses autocast's casts into the neighbouring kernels
with torch.autocast("cuda", dtype=torch.bfloat16):
    loss = model(x).sum()"""
CODE_TRAINING_FP16 = """\
model = torch.compile(model)    # fuses autocast's casts into the neighbouring kernels
with torch.autocast("cuda", dtype=torch.float16):
    loss = model(x).sum()"""


def _json_list(text: str) -> list[object]:
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return []
    return value if isinstance(value, list) else []


def _direction(input_types: str, concrete: str) -> str | None:
    """'float → bf16', 'fp16 → float', … for a cast between float32 and a lower precision,
    from the cast's recorded Input type and Concrete Inputs; None otherwise."""
    types, values = _json_list(input_types), _json_list(concrete)
    if len(types) < 2 or len(values) < 2:
        return None
    src, dst = str(types[0]), str(values[1])
    if src == TYPE_FLOAT and dst in LOW:
        return f"float → {LOW[dst]}"
    if src in TYPE_LOW and dst == FLOAT:
        return f"{TYPE_LOW[src]} → float"
    return None


def mixed_precision_casts(ctx: Context) -> tuple[npt.NDArray[np.int64], list[str]]:
    """Host rows that are casts between float32 and fp16/bf16 made inside another ATen
    operator (the premises above), with each one's direction."""
    trace, host, tree = ctx.trace, ctx.trace.host, ctx.a.tree
    cast = names.mask_in(trace, CAST_OPS)[host.name]
    parent = tree.parent
    rows = np.flatnonzero(cast & (parent >= 0))
    if not len(rows):
        return rows, []
    # the operator that cast: down inside autocast's lower-precision operators, up inside its
    # float32 ones (an aten::_to_copy under aten::to is that aten::to's: not a parent here)
    down_op = names.mask_in(trace, names.AUTOCAST_LOWER_PRECISION_OPS)[host.name[parent[rows]]]
    up_op = names.mask_in(trace, names.AUTOCAST_FP32_OPS)[host.name[parent[rows]]]
    keep = (down_op | up_op) & (host.input_types[rows] >= 0) & (host.concrete_inputs[rows] >= 0)
    rows, down_op = rows[keep], down_op[keep]
    seen: dict[tuple[int, int], str | None] = {}
    kept, direction, down = [], [], []
    for r, is_down in zip(rows.tolist(), down_op.tolist(), strict=True):
        key = (int(host.input_types[r]), int(host.concrete_inputs[r]))
        if key not in seen:
            seen[key] = _direction(trace.strings[key[0]], trace.strings[key[1]])
        d = seen[key]
        if d is not None and d.startswith("float") == is_down:
            kept.append(r)
            direction.append(d)
            down.append(is_down)
    if not any(down):  # no float32 input cast down by a matmul/convolution: not autocast
        return np.zeros(0, dtype=np.int64), []
    return np.asarray(kept, dtype=np.int64), direction


def _cast_of(ctx: Context, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Per host row, the index (into ``rows``) of the cast whose subtree holds it, or -1:
    one top-down pass per depth (the innermost cast wins for a cast inside a cast)."""
    tree = ctx.a.tree
    cast_of = np.full(len(ctx.trace.host), -1, dtype=np.int64)
    cast_of[rows] = np.arange(len(rows))
    for level in range(1, int(tree.depth.max(initial=0)) + 1):
        sel = np.flatnonzero((tree.depth == level) & (tree.parent >= 0) & (cast_of < 0))
        cast_of[sel] = cast_of[tree.parent[sel]]
    return cast_of


def check(ctx: Context) -> Finding | None:
    if not ctx.has_gpu or ctx.premises.vendor not in ("nvidia", "amd"):
        return None
    rows, direction = mixed_precision_casts(ctx)
    if not len(rows):
        return None
    trace, host = ctx.trace, ctx.trace.host
    kernel = ctx.kernel_sel
    weight = ctx.device_in_steps
    owner = ctx.a.tree.device_owner
    total = float(weight[kernel].sum())
    cast_of = _cast_of(ctx, rows)
    inside = (gather(cast_of, owner, -1) >= 0) & kernel & (weight > 0)
    ns = float(weight[inside].sum())
    if total <= 0 or 100.0 * ns / total < THRESHOLD_PCT:
        return None
    # per cast row: its kernels' time (kernel -> the cast whose subtree launched it)
    tree = ctx.a.tree
    k = np.flatnonzero(inside)
    per_cast = np.bincount(cast_of[owner[k]], weights=weight[k], minlength=len(rows))
    # evidence: by the operator that cast, and the direction
    groups: dict[tuple[str, str], list[float]] = {}
    for i, r in enumerate(rows.tolist()):
        key = (trace.strings[host.name[tree.parent[r]]], direction[i])
        g = groups.setdefault(key, [0.0, 0.0])
        g[0] += float(per_cast[i])
        g[1] += 1
    top = sorted(groups.items(), key=lambda kv: -kv[1][0])[:4]
    low = "bf16" if sum(1 for d in direction if "bf16" in d) * 2 >= len(direction) else "fp16"
    # a run not known to be inference keeps autocast: its casts are fused, never dropped
    p = ctx.premises
    keep_autocast = not p.inference
    compiled = p.compiled is not None
    if p.training:
        kind = "the run has a backward pass (training): autocast stays, its casts can be fused"
    elif keep_autocast:
        kind = p.run_line + ": autocast stays, its casts can be fused"
    else:
        kind = "no backward pass in the trace (inference): the weights need not stay float32"
    evidence = [
        f"casts between float32 and {low} inside other operators: {fmt_ns(ns / ctx.n_steps)} "
        f"of kernels per step ({100.0 * ns / total:.1f} % of GPU kernel time, "
        f"{count(len(rows) / ctx.n_steps, 'cast')} per step)",
        *(f"inside {short(op, 50)} ({d}): {fmt_ns(w / ctx.n_steps)} per step "
          f"({count(n / ctx.n_steps, 'cast')})" for (op, d), (w, n) in top),
        kind,
    ]
    if keep_autocast:
        fix = ("These are autocast's casts around the operators it runs in "
               f"{low} and those it keeps in float32 (layer_norm, softmax, …): "
               + ("the run is compiled, so these run outside its compiled graphs: compile "
                  "the regions that run them (torch.compile(..., fullgraph=True) shows the "
                  "graph breaks)." if compiled else
                  "torch.compile fuses them into the neighbouring kernels."))
        code = None if compiled else (CODE_TRAINING_BF16 if low == "bf16" else
                                      CODE_TRAINING_FP16)
    else:
        fix = ("These are autocast's casts: in inference, cast the model and its inputs to "
               f"{low} once and run without autocast, so that no operator casts on the way "
               f"(weights and activations stay {low}; normalisations and softmax accumulate "
               "in float32 inside their kernels)"
               + ("." if compiled else
                  ", or let torch.compile fuse the casts into the neighbouring kernels."))
        code = CODE_INFERENCE_BF16 if low == "bf16" else CODE_INFERENCE_FP16
    return ctx.finding(
        id="autocast-casts",
        title="Mixed-precision casts inside operators (autocast's) take a large share",
        saving_ns=ns / ctx.n_steps,
        estimate=("All kernel time per step of casts between float32 and "
                  f"{low} made inside other operators: without autocast (inference) none "
                  "are made, fused (torch.compile) they cost no kernels of their own; the "
                  "upper bound."),
        evidence=evidence,
        fix=fix,
        code=code,
        source_lines=ctx.source_lines(rows, per_cast.astype(np.float64)),
        references=("https://pytorch.org/docs/stable/amp.html#autocast-op-reference",),
    )
