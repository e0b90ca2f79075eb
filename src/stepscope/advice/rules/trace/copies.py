"""Rule 7: materialising copies and layout changes take a large share of the work."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding
from stepscope.advice.rules.trace._opshare import op_family_share, optimizer_note
from stepscope.classify import names

COPY_OPS = frozenset({
    "aten::copy_", "aten::contiguous", "aten::clone", "aten::repeat", "aten::repeat_interleave",
    "aten::_to_copy", "aten::to", "aten::expand_copy", "aten::permute_copy", "aten::index_select",
    "aten::tile", "aten::stack", "aten::cat",
})
# Operators that only reshape or re-view a tensor: a copy under them (reshape of a
# non-contiguous tensor clones it) follows from the user's layout, like a copy they called.
LAYOUT_OPS = frozenset({
    "aten::reshape", "aten::view", "aten::flatten", "aten::unflatten", "aten::permute",
    "aten::transpose", "aten::t", "aten::expand", "aten::expand_as", "aten::squeeze",
    "aten::unsqueeze", "aten::narrow", "aten::select", "aten::slice", "aten::movedim",
    "aten::reshape_as", "aten::view_as",
})
THRESHOLD_PCT = 10.0  # of GPU kernel time (CPU: of operator self time)

CODE = """\
# broadcast instead of materialising repeats/expands
y = x * w.view(1, -1)            # not: x * w.repeat(n, 1)
# keep views, avoid .contiguous() after permute where the consumer accepts strides
x = x.permute(0, 2, 1)           # a view: most operators accept its strides as they are
# let the compiler fuse layout changes into their consumers
model = torch.compile(model)"""
# already compiled: the same without the torch.compile line
CODE_COMPILED = CODE.rsplit("\n# let the compiler", 1)[0]


def inside_other_ops(ctx: Context) -> npt.NDArray[np.bool_]:
    """Host rows called by another ATen operator that is neither a copy nor a layout op.

    PyTorch's dispatcher records the operators an operator calls internally as its children
    (``aten::convolution_backward`` → ``aten::contiguous`` → ``aten::clone`` → ``aten::copy_``
    on CPU): such a copy is that operator's implementation, which no change to the user's
    code removes. Only copies whose ATen ancestors are copies or layout ops are the user's.
    """
    host, tree = ctx.trace.host, ctx.a.tree
    parent, depth = tree.parent, tree.depth
    allowed = names.mask_in(ctx.trace, COPY_OPS | LAYOUT_OPS)
    aten = names.mask(ctx.trace, names.is_aten_op)
    blocks = aten[host.name] & ~allowed[host.name]  # an operator whose children are its own
    inside = np.zeros(len(host), dtype=bool)
    for level in range(1, int(depth.max(initial=0)) + 1):  # top down: one pass per depth
        sel = np.flatnonzero((depth == level) & (parent >= 0))
        up = parent[sel]
        inside[sel] = inside[up] | blocks[up]
    return inside


def check(ctx: Context) -> Finding | None:
    share = op_family_share(ctx, names.mask_in(ctx.trace, COPY_OPS), inside_other_ops(ctx))
    if share.pct_of_work < THRESHOLD_PCT:
        return None
    where = "GPU kernel time" if share.on_gpu else "operator CPU self time"
    compiled = ctx.premises.compiled is not None
    return ctx.finding(
        id="materialising-copies",
        title="Copies and layout changes (copy_, repeat, contiguous, ...) take a large share",
        saving_ns=share.ns_per_step,
        estimate=(f"All {where} per step of copy/layout operators: views and broadcasting "
                  "remove such copies entirely, so this is the upper bound."),
        evidence=[f"copy/layout operators: {share.pct_of_work:.1f} % of {where}", *share.evidence,
                  *optimizer_note(share.optimizer_ns_per_step, "copy/layout operators")],
        fix=("Avoid materialising tensors: broadcast instead of repeat/expand().contiguous(), "
             "keep permute/transpose as views, create tensors on the right device and dtype"
             + (" (the run is compiled: these copies run outside its compiled graphs or are "
                "materialised by them)." if compiled
                else ", and let torch.compile fuse the remaining layout changes.")),
        code=CODE_COMPILED if compiled else CODE,
        source_lines=ctx.source_lines(share.hosts, share.weights),
        references=("https://pytorch.org/docs/stable/notes/broadcasting.html",
                    "https://pytorch.org/docs/stable/tensor_view.html"),
    )
