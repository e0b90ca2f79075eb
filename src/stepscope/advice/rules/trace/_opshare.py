"""Shared by the operator-share rules: time of a family of operators, GPU or CPU."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.advice.context import Context, fmt_ns, short, top_by_name
from stepscope.analysis.events.links import gather
from stepscope.units import count


@dataclass(frozen=True)
class Share:
    ns_per_step: float  # time of the family per step (GPU kernels, or CPU self time)
    pct_of_work: float  # % of all GPU kernel time (GPU) or operator self time (CPU)
    on_gpu: bool
    evidence: list[str]
    hosts: npt.NDArray[np.int64]  # host rows, for source lines
    weights: npt.NDArray[np.float64]
    optimizer_ns_per_step: float = 0.0  # the family's time inside optimizer steps: left out


def op_family_share(ctx: Context, op_mask: npt.NDArray[np.bool_],
                    exclude: npt.NDArray[np.bool_] | None = None) -> Share:
    """``op_mask`` is over the string table (which operator names are in the family).

    GPU traces weigh the main GPU's kernels (time inside the steps) by the operator that
    launched them; CPU traces weigh operators by their self time (operators in the steps).
    Operators inside a DataLoader range (Context.in_loader) are the input pipeline's, which
    input-pipeline sizes, and those inside a JIT compilation (Context.in_compile: tracing on
    fake tensors, autotuning) are warm-up, and those of an optimizer step
    (Context.in_optimizer) are the optimizer's math, which a fused or foreach optimizer
    removes (unfused-optimizer): none is counted in the family (they stay in the total), nor
    are host rows in ``exclude``. ``optimizer_ns_per_step`` says how much of the family the
    optimizer held.
    """
    host = ctx.trace.host
    left_out = ctx.in_loader | ctx.in_compile | ctx.in_optimizer
    if exclude is not None:
        left_out = left_out | exclude
    if ctx.has_gpu:
        kernel = ctx.kernel_sel
        hosts = ctx.a.tree.device_owner[kernel]
        weight = ctx.device_in_steps[kernel]
        # kernels in the steps only: counts and times over the same window as the saving
        fam = (hosts >= 0) & gather(op_mask[host.name], hosts, False) & (weight > 0)
        in_opt = fam & gather(ctx.in_optimizer, hosts, False)
        fam &= ~gather(left_out, hosts, False)
        noun = "kernel"
        what = "of kernels per step"
    else:
        hosts = ctx.operators
        weight = ctx.times.host_self[hosts] * (ctx.in_steps(host.ts[hosts], host.end[hosts]) > 0)
        fam = op_mask[host.name[hosts]] & (weight > 0)
        in_opt = fam & ctx.in_optimizer[hosts]
        fam &= ~left_out[hosts]
        noun = "call"
        what = "CPU self time per step"
    opt_ns = float(weight[in_opt].sum())
    hosts, total = hosts[fam], float(weight.sum())
    weight = weight[fam]
    ns = float(weight.sum())
    ev = [f"{short(n)}: {fmt_ns(w / ctx.n_steps)} " + f"{what} ({count(c / ctx.n_steps, noun)})"
          for n, w, c in top_by_name(host.name[hosts], weight, ctx.trace.strings, 4)]
    return Share(ns / ctx.n_steps, 100 * ns / total if total else 0.0, ctx.has_gpu, ev,
                 hosts, weight, opt_ns / ctx.n_steps)


def optimizer_note(ns_per_step: float, family: str) -> list[str]:
    """The evidence line for a family's time inside optimizer steps (left out), if any."""
    if ns_per_step <= 0:
        return []
    return [f"{fmt_ns(ns_per_step)} per step of {family} inside optimizer.step left out: "
            "the optimizer's per-parameter math, which a fused or foreach optimizer removes, "
            "not this fix"]
