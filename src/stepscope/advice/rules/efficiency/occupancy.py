"""Rule 13: kernels with low achieved occupancy dominate GPU time."""

from __future__ import annotations

from stepscope.advice.context import Context, fmt_ns, short
from stepscope.advice.finding import Finding
from stepscope.analysis.trace.kernels import KernelRow
from stepscope.classify import names
from stepscope.classify.matrix_cores import is_gemm_or_conv_kernel

OCCUPANCY_PCT = 15.0  # est. achieved occupancy below 15 %
THRESHOLD_PCT = 20.0  # those kernels together, % of GPU kernel time
# Library GEMM/convolution kernels (cuBLAS, CUTLASS, cuDNN, hipBLASLt, MIOpen) choose large
# register/shared-memory tiles and run one or two blocks per SM by design: low occupancy
# buys data reuse, and their speed is judged against the FLOP peak (low-mfu, the roofline).
# Their occupancy is a problem only when the grid leaves most SMs without a block (CUPTI's
# "blocks per SM" under one half: a problem too small for the GPU).
GEMM_FILL = 0.5


def _judged(r: KernelRow) -> bool:
    """Kernels whose low occupancy is worth reporting (see GEMM_FILL)."""
    if names.is_collective_kernel(r.name):
        return False  # communication kernels are deliberately small (a few blocks)
    if is_gemm_or_conv_kernel(r.name):
        return r.blocks_per_sm is not None and r.blocks_per_sm < GEMM_FILL
    return True


def check(ctx: Context) -> Finding | None:
    rows = ctx.a.kernels
    if not ctx.has_gpu or not rows or rows[0].achieved_occupancy_pct is None:
        return None
    total = sum(r.total_us for r in rows if not names.is_collective_kernel(r.name))
    low = [r for r in rows if _judged(r) and r.achieved_occupancy_pct is not None
           and 0 < r.achieved_occupancy_pct < OCCUPANCY_PCT]
    low_us = sum(r.total_us for r in low)
    if total <= 0 or 100 * low_us / total < THRESHOLD_PCT:
        return None
    # if latency-bound, time falls at most in proportion to occupancy up to the threshold
    saving_us = sum(r.total_us * (1 - (r.achieved_occupancy_pct or 0) / OCCUPANCY_PCT)
                    for r in low)
    evidence = [f"kernels below {OCCUPANCY_PCT:.0f} % est. achieved occupancy: "
                f"{100 * low_us / total:.0f} % of GPU kernel time"]
    by_design = sum(r.total_us for r in rows
                    if is_gemm_or_conv_kernel(r.name) and not _judged(r)
                    and r.achieved_occupancy_pct is not None
                    and 0 < r.achieved_occupancy_pct < OCCUPANCY_PCT)
    if by_design > 0:
        evidence.append(f"not counted: library GEMM/convolution kernels under "
                        f"{OCCUPANCY_PCT:.0f} % occupancy whose grid fills the GPU "
                        f"({100 * by_design / total:.0f} % of kernel time): large tiles at one "
                        "or two blocks per SM are their design")
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
