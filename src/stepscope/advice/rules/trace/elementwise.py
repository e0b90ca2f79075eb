"""Rule 8: elementwise (pointwise) kernels dominate -> fuse them."""

from __future__ import annotations

import numpy as np

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.advice.rules.trace._opshare import op_family_share, optimizer_note
from stepscope.analysis.events.links import gather
from stepscope.classify import names
from stepscope.units import count

THRESHOLD_PCT = 40.0  # of GPU kernel time (CPU: of operator self time)
FUSED_FRACTION = 0.5  # fused, a chain of pointwise ops costs at most half as much

POINTWISE = frozenset(
    f"aten::{n}{s}" for n in (
        "add", "sub", "mul", "div", "neg", "exp", "log", "sqrt", "rsqrt", "pow", "abs",
        "relu", "gelu", "silu", "sigmoid", "tanh", "clamp", "clamp_min", "clamp_max", "where",
        "threshold", "threshold_backward", "gelu_backward", "silu_backward",
        "sigmoid_backward", "tanh_backward", "maximum", "minimum", "sin", "cos", "reciprocal",
        "masked_fill", "addcmul", "addcdiv", "lerp", "fill", "zero", "leaky_relu", "hardtanh",
        "eq", "ne", "lt", "gt", "le", "ge", "logical_and", "logical_or", "bitwise_and",
    ) for s in ("", "_"))
KERNEL_TOKENS = ("elementwise_kernel", "vectorized_elementwise", "unrolled_elementwise",
                 "triton_poi")


def is_pointwise_kernel(name: str) -> bool:
    return any(t in name for t in KERNEL_TOKENS)


def is_eager_pointwise_kernel(name: str) -> bool:
    """A pointwise kernel Inductor did not generate: Inductor's triton_poi_* are fused
    chains already, so in a compiled run only the eager ones are left to fuse."""
    return is_pointwise_kernel(name) and not names.is_inductor_kernel(name)


# already compiled: the eager pointwise kernels left run outside the compiled graphs
CODE_COMPILED = """\
torch._logging.set_logs(graph_breaks=True)     # print where and why the graph breaks
model = torch.compile(model, fullgraph=True)   # or make the first break an error"""

CODE = """\
model = torch.compile(model)      # fuses chains of pointwise ops into one kernel
# or use fused building blocks: F.gelu(x, approximate="tanh"), F.scaled_dot_product_attention,
# torch.nn.functional.layer_norm, fused optimizers (fused=True)"""


def check(ctx: Context) -> Finding | None:
    trace = ctx.trace
    compiled = ctx.premises.compiled
    if ctx.has_gpu:
        dev = trace.device
        # communication kernels are not compute: out of the denominator
        kernel = ctx.kernel_sel & ~names.mask(trace, names.is_collective_kernel)[dev.name]
        dur = ctx.device_in_steps
        # in a compiled run Inductor's triton_poi_ kernels are fused already: not counted
        pointwise = is_eager_pointwise_kernel if compiled else is_pointwise_kernel
        pw = kernel & names.mask(trace, pointwise)[dev.name]
        total = float(dur[kernel].sum())
        # the optimizer's per-parameter math is unfused-optimizer's (Context.in_optimizer)
        in_opt = pw & gather(ctx.in_optimizer, ctx.a.tree.device_owner, False)
        opt_ns_step = float(dur[in_opt].sum()) / ctx.n_steps
        pw &= ~in_opt
        ns = float(dur[pw].sum())
        pct = 100 * ns / total if total else 0.0
        ns_step = ns / ctx.n_steps
        owner = ctx.a.tree.device_owner[pw]
        ok = owner >= 0
        evidence = [f"elementwise kernels: {pct:.1f} % of GPU kernel time "
                    f"({fmt_ns(ns_step)} per step, "
                    f"{count(round(np.count_nonzero(dur[pw] > 0) / ctx.n_steps), 'kernel')})"]
        evidence += [f"{short(n)}: {fmt_ns(w / ctx.n_steps)} per step"
                     for n, w, _ in top_by_name(trace.host.name[owner[ok]], dur[pw][ok],
                                                trace.strings, 4)]
        hosts, weights = owner[ok], dur[pw][ok]
        where = "GPU kernel time"
        evidence += optimizer_note(opt_ns_step, "elementwise kernels")
    else:
        share = op_family_share(ctx, names.mask_in(trace, POINTWISE))
        pct, ns_step = share.pct_of_work, share.ns_per_step
        evidence = [f"pointwise operators: {pct:.1f} % of operator CPU self time", *share.evidence,
                    *optimizer_note(share.optimizer_ns_per_step, "pointwise operators")]
        hosts, weights = share.hosts, share.weights
        where = "operator CPU self time"
    if pct < THRESHOLD_PCT:
        return None
    return ctx.finding(
        id="elementwise-dominated", title="Elementwise (pointwise) operations dominate: fuse them",
        saving_ns=ns_step * FUSED_FRACTION,
        estimate=(f"Half of the pointwise {where} per step: pointwise ops are memory-bound, and "
                  "fusing chains of them removes at least every other read/write of the tensors."),
        evidence=evidence,
        fix=("Fuse pointwise chains with torch.compile, or use fused implementations."
             if compiled is None else
             f"The run is compiled ({short(compiled, 40)}), yet these pointwise kernels run "
             "eagerly: they lie outside the compiled graphs (graph breaks, uncompiled "
             "functions). Find the breaks (TORCH_LOGS=graph_breaks) and compile those parts, "
             "or use fused implementations."),
        code=CODE if compiled is None else CODE_COMPILED,
        source_lines=ctx.source_lines(hosts, weights),
        references=("https://pytorch.org/docs/stable/generated/torch.compile.html",
                    "https://pytorch.org/tutorials/recipes/recipes/tuning_guide.html"
                    "#fuse-pointwise-operations"),
    )
