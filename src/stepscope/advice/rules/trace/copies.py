"""Rule 7: materialising copies and layout changes take a large share of the work."""

from __future__ import annotations

from stepscope.advice.context import Context
from stepscope.advice.finding import Finding
from stepscope.advice.rules.trace._opshare import op_family_share
from stepscope.classify import names

COPY_OPS = frozenset({
    "aten::copy_", "aten::contiguous", "aten::clone", "aten::repeat", "aten::repeat_interleave",
    "aten::_to_copy", "aten::to", "aten::expand_copy", "aten::permute_copy", "aten::index_select",
    "aten::tile", "aten::stack", "aten::cat",
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


def check(ctx: Context) -> Finding | None:
    share = op_family_share(ctx, names.mask_in(ctx.trace, COPY_OPS))
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
        evidence=[f"copy/layout operators: {share.pct_of_work:.1f} % of {where}", *share.evidence],
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
