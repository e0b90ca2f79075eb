"""Blocks per SM and estimated achieved occupancy of kernels, from their launch config.

Kineto writes both per kernel (CUPTI's occupancy calculator); nsys exports only the launch
configuration, so we compute the same two figures the same way, vectorised:

* blocks per SM = grid blocks / SM count;
* theoretical active blocks per SM = the smallest of the limits from warps, registers,
  shared memory and the per-SM block limit (CUDA occupancy calculator, without allocation
  granularity: a slight over-estimate for odd register counts);
* estimated achieved occupancy % = min(blocks per SM, active blocks) x warps per block /
  max warps per SM x 100 (Kineto's "est. achieved occupancy %": a grid too small to fill
  the GPU lowers it).

Unknown devices or launch configs give NaN, as in Kineto.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from stepscope.model.trace import DeviceProperties

F32 = npt.NDArray[np.float32]


def estimated_occupancy(
    devices: tuple[DeviceProperties, ...],
    device: npt.NDArray[np.int32],
    grid_blocks: npt.NDArray[np.int64],
    block_threads: npt.NDArray[np.int64],
    registers: npt.NDArray[np.int32],
    shared_mem: npt.NDArray[np.int64],
    kernel: npt.NDArray[np.bool_],
) -> tuple[F32, F32]:
    n = len(device)
    bps = np.full(n, np.nan, np.float32)
    occ = np.full(n, np.nan, np.float32)
    for d in devices:
        if d.num_sms <= 0:
            continue
        sel = kernel & (device == d.id) & (grid_blocks > 0) & (block_threads > 0)
        if not sel.any():
            continue
        blocks = grid_blocks[sel].astype(np.float64)
        per_sm = blocks / d.num_sms
        bps[sel] = per_sm
        # warp sizes are 32 (NVIDIA) or 64 (AMD); anything else is a corrupt device row
        warp = d.warp_size if 0 < d.warp_size <= 1024 else 32
        max_warps = d.max_warps_per_sm or (d.max_threads_per_sm // warp)
        if max_warps <= 0:
            continue
        warps = np.ceil(block_threads[sel] / warp)
        limit = np.floor(max_warps / warps)
        if d.max_blocks_per_sm > 0:
            limit = np.minimum(limit, d.max_blocks_per_sm)
        regs = registers[sel].astype(np.float64)
        if d.max_registers_per_sm > 0:
            per_block = np.maximum(regs, 0) * warps * warp
            with np.errstate(divide="ignore"):
                limit = np.minimum(limit, np.where(per_block > 0,
                                                   np.floor(d.max_registers_per_sm / per_block),
                                                   np.inf))
        shm = shared_mem[sel].astype(np.float64)
        if d.max_shared_memory_per_sm > 0:
            with np.errstate(divide="ignore"):
                limit = np.minimum(limit, np.where(shm > 0,
                                                   np.floor(d.max_shared_memory_per_sm / shm),
                                                   np.inf))
        active = np.minimum(per_sm, np.maximum(limit, 0))
        occ[sel] = np.minimum(active * warps / max_warps * 100.0, 100.0)
    return bps, occ
