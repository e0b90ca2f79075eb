"""Synthetic multi-rank runs: GPU traces with compute kernels and NCCL all-reduces.

Every rank computes, then all-reduces; a collective ends on all ranks at the same global time
(the last arriver's start + the transfer), as NCCL does. Per-rank clock offsets shift whole
traces to check that they do not fake stragglers.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.builders import PID, TraceBuilder

NELEMS = 1_000_000  # float32 -> 4 MB per all-reduce


def write_run(directory: Path, compute_us: list[float], *, steps: int = 2,
              transfer_us: float = 1000.0, offsets_us: list[float] | None = None,
              overlap_us: list[float] | None = None, nelems: int = NELEMS,
              distributed_info: bool = True) -> list[Path]:
    world = len(compute_us)
    offsets = offsets_us or [0.0] * world
    overlap = overlap_us or [0.0] * world
    step_len = max(compute_us) + transfer_us + 500.0
    paths = []
    for rank in range(world):
        b = TraceBuilder()
        if distributed_info:
            b.distributed = {"backend": "nccl", "rank": rank, "world_size": world}
        base = 1_000_000.0 + offsets[rank]
        for s in range(steps):
            t0 = base + s * step_len
            with b.step(s + 1, t0, step_len):
                b.launch(None, "cudaLaunchKernel", t0, 5, kernel="sm90_gemm_kernel",
                         k_ts=t0 + 10, k_dur=compute_us[rank])
                comm_start = t0 + 10 + compute_us[rank]
                comm_end = t0 + 10 + max(compute_us) + transfer_us
                b.launch(None, "cudaLaunchKernel", t0 + 6, 5,
                         kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
                         k_ts=comm_start, k_dur=comm_end - comm_start, stream=20,
                         **{"Collective name": "allreduce", "In msg nelems": nelems,
                            "Out msg nelems": nelems, "Group size": world, "dtype": "Float",
                            "Process Group Name": "0"})
                if overlap[rank]:  # a compute kernel on another stream during the all-reduce
                    b.launch(None, "cudaLaunchKernel", t0 + 7, 5, kernel="elementwise_kernel",
                             k_ts=comm_start, k_dur=overlap[rank], stream=9)
        paths.append(b.write(directory, f"rank{rank}.pt.trace.json"))
    return paths


def write_capture(directory: Path, name: str, *, base_us: float, pid: int = PID,
                  steps: int = 3, gemm_us: float = 800.0,
                  base_time_ns: int | None = None) -> Path:
    """One capture of a single-process GPU training loop (a GEMM per 1 ms step) starting at
    ``base_us`` (wall clock), its host events under ``pid``: captures of one process differ
    in ``base_us`` only; other processes in ``pid``. ``base_time_ns``: write Kineto's
    ``baseTimeNanoseconds`` (times then relative to it, as PyTorch >= 2.2 writes them)."""
    b = TraceBuilder()
    for s in range(steps):
        t0 = base_us + s * 1000.0
        with b.step(s + 1, t0, 1000.0):
            b.launch(None, "cudaLaunchKernel", t0, 5, kernel="sm90_gemm_kernel",
                     k_ts=t0 + 10, k_dur=gemm_us)
    for e in b.events:
        if e.get("pid") == PID:
            e["pid"] = pid
    path = b.write(directory, name)
    if base_time_ns is not None:
        doc = json.loads(path.read_text())
        doc["baseTimeNanoseconds"] = base_time_ns
        path.write_text(json.dumps(doc))
    return path
