"""Rule 3: Tensor-Core-eligible work runs without Tensor Cores -> AMP / TF32."""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.advice.finding import Finding
from stepscope.analysis.events.links import gather
from stepscope.classify import names

MIN_SHARE_PCT = 10.0  # eligible work off Tensor Cores, % of GPU kernel time
MAX_TC_PCT = 50.0  # of eligible kernel time already on Tensor Cores
SPEEDUP = 2.0  # assumed speed-up of that work on Tensor Cores (hence saving = half)

CODE_AMP_FP16 = """\
scaler = torch.amp.GradScaler("cuda")
for x, y in loader:
    optimizer.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()"""

CODE_AMP_BF16 = """\
torch.backends.cuda.matmul.allow_tf32 = True   # or torch.set_float32_matmul_precision("high")
torch.backends.cudnn.allow_tf32 = True
for x, y in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn(model(x), y)
    loss.backward()
    optimizer.step()"""


def check(ctx: Context) -> Finding | None:
    trace = ctx.trace
    prop = next((p for p in trace.meta.devices if p.id == ctx.main_device), None)
    if not ctx.has_gpu or prop is None or prop.compute_major < 7:
        return None
    dev, host = trace.device, trace.host
    owner = ctx.a.tree.device_owner
    # communication kernels are not compute: out of the denominator
    kernel = ctx.kernel_sel & ~names.mask(trace, names.is_collective_kernel)[dev.name]
    dur = ctx.device_in_steps
    eligible_name = names.mask_in(trace, names.TC_ELIGIBLE_OPS)
    eligible = kernel & (owner >= 0) & gather(eligible_name[host.name], owner, False)
    tc = names.mask(trace, names.is_tensor_core_kernel)[dev.name]
    kernel_ns = float(dur[kernel].sum())
    eligible_ns = float(dur[eligible].sum())
    off = eligible & ~tc
    off_ns = float(dur[off].sum())
    if kernel_ns <= 0 or eligible_ns <= 0:
        return None
    tc_pct = 100.0 * (eligible_ns - off_ns) / eligible_ns
    off_pct = 100.0 * off_ns / kernel_ns
    if off_pct < MIN_SHARE_PCT or tc_pct >= MAX_TC_PCT:
        return None
    off_per_step = ctx.per_step_union(dev.ts[off], dev.end[off])
    saving = off_per_step * (1.0 - 1.0 / SPEEDUP)
    ampere = prop.compute_major >= 8
    evidence = [
        f"{100 * eligible_ns / kernel_ns:.0f} % of GPU kernel time is launched by Tensor-Core-"
        f"eligible operators; {tc_pct:.0f} % of that runs on Tensor Cores",
        f"{fmt_ns(off_per_step)} per step of eligible work runs on CUDA cores "
        f"({prop.name}, compute capability {prop.compute_major}.{prop.compute_minor})",
    ]
    op_ids = host.name[owner[off]]
    for name, ns, n in top_by_name(op_ids, dur[off], trace.strings, 4):
        evidence.append(f"operator {short(name)}: {fmt_ns(ns / ctx.n_steps)} per step "
                        f"({n / ctx.n_steps:.0f} kernels)")
    for name, ns, _ in top_by_name(dev.name[off], dur[off], trace.strings, 3):
        evidence.append(f"kernel {short(name, 80)}: {fmt_ns(ns / ctx.n_steps)} per step")
    fix = ("Run matmuls and convolutions in reduced precision on Tensor Cores: "
           + ("torch.autocast with bfloat16, and TF32 for the remaining float32 matmuls."
              if ampere
              else "torch.autocast with float16 and a GradScaler (automatic mixed precision)."))
    return ctx.finding(
        id="tensor-cores", title="Matmuls/convolutions run without Tensor Cores: enable AMP"
        + (" / TF32" if ampere else ""),
        saving_ns=saving,
        estimate=(f"Eligible kernel time not on Tensor Cores per step (union), assuming Tensor "
                  f"Cores run it {SPEEDUP:.0f}× faster (typical end-to-end; peak math is 8–16×)."),
        evidence=evidence, fix=fix, code=CODE_AMP_BF16 if ampere else CODE_AMP_FP16,
        source_lines=ctx.source_lines(owner[off], dur[off]),
        references=("https://pytorch.org/docs/stable/amp.html",
                    "https://pytorch.org/docs/stable/notes/cuda.html#tensorfloat-32-tf32-on-ampere-and-later-devices"),
    )
