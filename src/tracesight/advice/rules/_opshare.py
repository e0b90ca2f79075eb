"""Shared by the operator-share rules: time of a family of operators, GPU or CPU."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tracesight.analysis.links import gather
from tracesight.model.trace import DEV_KERNEL

from ..context import Context, fmt_ns, short, top_by_name


@dataclass(frozen=True)
class Share:
    ns_per_step: float  # time of the family per step (GPU kernels, or CPU self time)
    pct_of_work: float  # % of all GPU kernel time (GPU) or operator self time (CPU)
    on_gpu: bool
    evidence: list[str]
    hosts: npt.NDArray[np.int64]  # host rows, for source lines
    weights: npt.NDArray[np.float64]


def op_family_share(ctx: Context, op_mask: npt.NDArray[np.bool_]) -> Share:
    """``op_mask`` is over the string table (which operator names are in the family)."""
    trace = ctx.trace
    host, dev = trace.host, trace.device
    if ctx.has_gpu:
        owner = ctx.a.tree.device_owner
        kernel = ctx.device_sel & (dev.kind == DEV_KERNEL)
        dur = ctx.in_steps(dev.ts, dev.end).astype(np.float64)
        fam = kernel & (owner >= 0) & gather(op_mask[host.name], owner, False)
        total = float(dur[kernel].sum())
        ns = float(dur[fam].sum())
        ev = [f"{short(n)}: {fmt_ns(w / ctx.n_steps)} "
              f"of kernels per step ({c / ctx.n_steps:.0f} kernels)"
              for n, w, c in top_by_name(host.name[owner[fam]], dur[fam], trace.strings, 4)]
        return Share(ns / ctx.n_steps, 100 * ns / total if total else 0.0, True, ev,
                     owner[fam], dur[fam])
    ops = np.flatnonzero(ctx.times.is_operator)
    self_ns = ctx.times.host_self[ops] * (ctx.in_steps(host.ts[ops], host.end[ops]) > 0)
    fam = op_mask[host.name[ops]]
    total = float(self_ns.sum())
    ns = float(self_ns[fam].sum())
    ev = [f"{short(n)}: {fmt_ns(w / ctx.n_steps)} "
          f"CPU self time per step ({c / ctx.n_steps:.0f} calls)"
          for n, w, c in top_by_name(host.name[ops[fam]], self_ns[fam], trace.strings, 4)]
    return Share(ns / ctx.n_steps, 100 * ns / total if total else 0.0, False, ev,
                 ops[fam], self_ns[fam])
