"""Module rule: one sub-module of the model takes most of the step."""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns
from stepscope.advice.finding import Finding
from stepscope.units import count

MIN_SHARE_PCT = 40.0
CODE = "hot = torch.compile(hot)  # the module named above, e.g. model.encoder"
ONE_CHILD_PCT = 90.0  # a module whose one child holds this share: look at the child


def check(ctx: Context) -> Finding | None:
    mods = ctx.a.modules
    if mods is None or not mods.nodes or ctx.step_ns <= 0:
        return None
    device = any(n.device_total_ns > 0 for n in mods.nodes)

    def total(n: object) -> float:
        return float(getattr(n, "device_total_ns" if device else "host_total_ns"))

    per_step = {n.id: total(n) / ctx.n_steps for n in mods.nodes}
    kids: dict[int, list[int]] = {}
    for n in mods.nodes:
        kids.setdefault(n.parent, []).append(n.id)
    cands = [n for n in mods.nodes if n.depth >= 1
             and 100.0 * per_step[n.id] / ctx.step_ns >= MIN_SHARE_PCT
             and not any(per_step[c] >= ONE_CHILD_PCT / 100.0 * per_step[n.id]
                         for c in kids.get(n.id, []))]
    if not cands:
        return None
    n = max(cands, key=lambda x: (x.depth, per_step[x.id]))
    t = per_step[n.id]
    what = "device" if device else "host"
    evidence = [f"{n.path}: {fmt_ns(t)} of {what} time per step "
                f"({100.0 * t / ctx.step_ns:.1f} % of a {fmt_ns(ctx.step_ns)} step), "
                f"{count(n.calls, 'call')}"]
    items = n.kernels if device else n.operators
    if items:
        evidence.append("inside it: " + ", ".join(
            f"{x.name[:60]} {fmt_ns(x.total_ns / ctx.n_steps)}" for x in items[:3]))
    p = ctx.premises
    ways = []
    if p.compiled is None:
        ways.append("compile it (torch.compile on the module)")
    if not p.low_precision:
        ways.append("run it in bf16/fp16 with autocast")
    ways.append("check its operators and kernels in the Modules view")
    return ctx.finding(
        id="dominant-module",
        title=f"Module {n.name} takes {100.0 * t / ctx.step_ns:.0f} % of the step",
        saving_ns=t / 2.0,
        estimate=("If this module ran 2x faster (fusion, lower precision, a better kernel "
                  "or a smaller layer), the step would save half its time."),
        evidence=evidence,
        fix=(f"Optimise {n.path} first: " + ", ".join(ways) + "."
             + (f" The run is already compiled ({p.compiled[:60]}): look for graph breaks "
                "around this module (TORCH_LOGS=graph_breaks)." if p.compiled else "")),
        code=CODE if p.compiled is None else None,
    )
