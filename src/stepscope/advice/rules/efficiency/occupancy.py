"""Rule 13: kernels with low achieved occupancy dominate GPU time."""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns, short
from stepscope.advice.finding import Finding
from stepscope.classify import names

OCCUPANCY_PCT = 15.0  # est. achieved occupancy below 15 %
THRESHOLD_PCT = 20.0  # those kernels together, % of GPU kernel time


def check(ctx: Context) -> Finding | None:
    rows = ctx.a.kernels
    if not ctx.has_gpu or not rows or rows[0].achieved_occupancy_pct is None:
        return None
    # communication kernels are deliberately small (a few blocks): not a launch problem
    rows = [r for r in rows if not names.is_collective_kernel(r.name)]
    total = sum(r.total_us for r in rows)
    low = [r for r in rows if r.achieved_occupancy_pct is not None
           and 0 < r.achieved_occupancy_pct < OCCUPANCY_PCT]
    low_us = sum(r.total_us for r in low)
    if total <= 0 or 100 * low_us / total < THRESHOLD_PCT:
        return None
    # if latency-bound, time falls at most in proportion to occupancy up to the threshold
    saving_us = sum(r.total_us * (1 - (r.achieved_occupancy_pct or 0) / OCCUPANCY_PCT)
                    for r in low)
    evidence = [f"kernels below {OCCUPANCY_PCT:.0f} % est. achieved occupancy: "
                f"{100 * low_us / total:.0f} % of GPU kernel time"]
    for r in low[:5]:
        cfg = f" grid {r.grid} block {r.block}" if r.grid and r.block else ""
        regs = f", {r.registers} registers/thread" if r.registers else ""
        evidence.append(f"{short(r.name, 80)}: {fmt_ns(r.total_us * 1000 / ctx.n_steps)} per step, "
                        f"occupancy {r.achieved_occupancy_pct:.0f} %{cfg}{regs}")
    return ctx.finding(
        id="low-occupancy", title="Kernels with very low occupancy dominate GPU time",
        saving_ns=saving_us * 1000 / ctx.n_steps,
        estimate=(f"Time of kernels under {OCCUPANCY_PCT:.0f} % occupancy per step, scaled by "
                  f"(1 − occupancy / {OCCUPANCY_PCT:.0f} %): the time a latency-bound kernel "
                  "would lose if it reached the threshold."),
        evidence=evidence,
        fix=("Give these kernels more parallel work: larger batch or fused dimensions, more "
             "blocks (grid smaller than the number of SMs leaves SMs idle), fewer registers or "
             "shared memory per block; for your own Triton/CUDA kernels tune BLOCK sizes and "
             "num_warps."),
        references=("https://docs.nvidia.com/cuda/cuda-c-best-practices-guide/index.html#occupancy",),
    )
