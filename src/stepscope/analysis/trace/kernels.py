"""Kernel statistics by name over the whole trace (torch-tb-profiler's Kernel view).

Mean blocks per SM and mean est. achieved occupancy are duration-weighted, with missing
values counted as 0 (as the Kernel view). A row by name counts the distinct launch
configurations (grid, block, registers, shared memory) of its calls and names the most
frequent one; :func:`kernel_config_stats` gives one row per (name, configuration), as
torch-tb-profiler's "Kernel Properties" grouping, so a merged row never stands for one
configuration it does not have.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from stepscope.classify import names
from stepscope.grouping import unique_inverse
from stepscope.model.trace import DEV_KERNEL, DeviceOps, Trace

Arr = npt.NDArray[Any]


def group_durations(inverse: Arr, dur: Arr, m: int) -> tuple[Arr, Arr, Arr, Arr]:
    """Total, count, min and max of ``dur`` per group (``inverse`` from np.unique; m groups)."""
    total = np.bincount(inverse, weights=dur, minlength=m)
    calls = np.bincount(inverse, minlength=m)
    mins = np.full(m, np.inf)
    np.minimum.at(mins, inverse, dur)
    maxs = np.zeros(m)
    np.maximum.at(maxs, inverse, dur)
    return total, calls, mins, maxs


@dataclass(frozen=True)
class KernelRow:
    name: str
    calls: int
    total_us: float
    mean_us: float
    min_us: float
    max_us: float
    blocks_per_sm: float | None
    achieved_occupancy_pct: float | None
    tensor_cores: bool
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers: int | None
    shared_mem: int | None
    configs: int = 1  # distinct launch configurations among the calls


def _config_keys(configs: Arr) -> Arr:
    """One uint64 per row of ``configs`` (int columns) so grouping is a 1-D unique
    (collisions: ~2^-64)."""
    mixed = np.zeros(len(configs), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for col in configs.T:
            mixed = mixed * np.uint64(0x9E3779B97F4A7C15) + col.astype(np.uint64)
    return mixed


def _launch_means(dev: DeviceOps, sel: np.ndarray, inverse: np.ndarray, dur: np.ndarray,
                  total: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray, bool, bool]:
    """Per group: blocks per SM and occupancy averaged over the calls, weighted by duration,
    and whether the trace records them at all."""
    blocks = np.nan_to_num(dev.blocks_per_sm[sel].astype(np.float64), nan=0.0)
    occ = np.nan_to_num(dev.occupancy_pct[sel].astype(np.float64), nan=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_blocks = np.bincount(inverse, weights=blocks * dur, minlength=m) / total
        mean_occ = np.bincount(inverse, weights=occ * dur, minlength=m) / total
    return (mean_blocks, mean_occ, bool(np.any(blocks > 0)),
            bool(np.any(dev.occupancy_pct[sel] >= 0)))


def kernel_stats(trace: Trace) -> list[KernelRow]:
    dev = trace.device
    sel = np.flatnonzero(dev.kind == DEV_KERNEL)
    if len(sel) == 0:
        return []
    name = dev.name[sel]
    uniq, inverse = unique_inverse(name)
    dur = dev.dur[sel].astype(np.float64)
    m = len(uniq)
    total, calls, mins, maxs = group_durations(inverse, dur, m)
    mean_blocks, mean_occ, has_blocks, has_occ = _launch_means(dev, sel, inverse, dur, total, m)
    configs = np.stack(
        (
            inverse,
            dev.grid_x[sel],
            dev.grid_y[sel],
            dev.grid_z[sel],
            dev.block_x[sel],
            dev.block_y[sel],
            dev.block_z[sel],
            dev.registers[sel],
            dev.shared_mem[sel],
        ),
        axis=1,
    ).astype(np.int64)
    _, first_row, cfg_count = np.unique(_config_keys(configs), return_index=True,
                                        return_counts=True)
    cfg = configs[first_row]
    n_configs = np.bincount(cfg[:, 0], minlength=m)
    # most frequent configuration per kernel: sort by (kernel, count desc), take first
    order = np.lexsort((-cfg_count, cfg[:, 0]))
    cfg = cfg[order]
    first = np.flatnonzero(np.concatenate(([True], cfg[1:, 0] != cfg[:-1, 0])))
    best = {int(cfg[i, 0]): cfg[i] for i in first}
    tc = names.mask(trace, names.is_tensor_core_kernel)
    rows = []
    for i in range(m):
        c = best[i]
        known = c[1] >= 0
        rows.append(
            KernelRow(
                name=trace.strings[int(uniq[i])],
                calls=int(calls[i]),
                total_us=float(total[i]) / 1000.0,
                mean_us=float(total[i]) / int(calls[i]) / 1000.0,
                min_us=float(mins[i]) / 1000.0,
                max_us=float(maxs[i]) / 1000.0,
                blocks_per_sm=float(np.nan_to_num(mean_blocks[i])) if has_blocks else None,
                achieved_occupancy_pct=float(np.nan_to_num(mean_occ[i])) if has_occ else None,
                tensor_cores=bool(tc[uniq[i]]),
                grid=(int(c[1]), int(c[2]), int(c[3])) if known else None,
                block=(int(c[4]), int(c[5]), int(c[6])) if c[4] >= 0 else None,
                registers=int(c[7]) if c[7] >= 0 else None,
                shared_mem=int(c[8]) if c[8] >= 0 else None,
                configs=int(n_configs[i]),
            )
        )
    rows.sort(key=lambda r: (-r.total_us, r.name))
    return rows


def kernel_config_stats(trace: Trace) -> list[KernelRow]:
    """One row per (kernel name, launch configuration), longest total first."""
    dev = trace.device
    sel = np.flatnonzero(dev.kind == DEV_KERNEL)
    if len(sel) == 0:
        return []
    cols = np.stack((dev.name[sel], dev.grid_x[sel], dev.grid_y[sel], dev.grid_z[sel],
                     dev.block_x[sel], dev.block_y[sel], dev.block_z[sel], dev.registers[sel],
                     dev.shared_mem[sel]), axis=1).astype(np.int64)
    _, first, inverse = np.unique(_config_keys(cols), return_index=True, return_inverse=True)
    inverse = inverse.reshape(-1)
    m = len(first)
    dur = dev.dur[sel].astype(np.float64)
    total, calls, mins, maxs = group_durations(inverse, dur, m)
    mean_blocks, mean_occ, has_blocks, has_occ = _launch_means(dev, sel, inverse, dur, total, m)
    tc = names.mask(trace, names.is_tensor_core_kernel)
    rows = []
    for i in range(m):  # one row per distinct (name, configuration), not per event
        c = cols[first[i]]
        rows.append(KernelRow(
            name=trace.strings[int(c[0])], calls=int(calls[i]),
            total_us=float(total[i]) / 1000.0, mean_us=float(total[i]) / int(calls[i]) / 1000.0,
            min_us=float(mins[i]) / 1000.0, max_us=float(maxs[i]) / 1000.0,
            blocks_per_sm=float(np.nan_to_num(mean_blocks[i])) if has_blocks else None,
            achieved_occupancy_pct=float(np.nan_to_num(mean_occ[i])) if has_occ else None,
            tensor_cores=bool(tc[c[0]]),
            grid=(int(c[1]), int(c[2]), int(c[3])) if c[1] >= 0 else None,
            block=(int(c[4]), int(c[5]), int(c[6])) if c[4] >= 0 else None,
            registers=int(c[7]) if c[7] >= 0 else None,
            shared_mem=int(c[8]) if c[8] >= 0 else None))
    rows.sort(key=lambda r: (-r.total_us, r.name, r.grid or (), r.block or ()))
    return rows
