"""Speed of the memory and module views on a synthetic trace built in memory.

    python benchmarks/bench_memory_modules.py --steps 2000

Each step: one ProfilerStep, a 3-level module tree (model > 8 blocks > 2 layers), one
operator per layer launching one kernel, and an alloc/free pair per operator (plus one
never-freed allocation per step). Prints the event counts and the seconds each analysis
takes; the goal is linear scaling (no per-event Python work).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from stepscope.analysis.events.links import Links
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.events.steps import find_steps
from stepscope.analysis.memory.records import memory_analysis
from stepscope.analysis.trace.modules import module_analysis
from stepscope.model.trace import (
    HOST_ANNOTATION,
    HOST_OP,
    HOST_PYTHON,
    DeviceOps,
    GpuAnnotations,
    HostOps,
    MemoryRecords,
    Runtimes,
    Syncs,
    Trace,
    TraceMeta,
)

BLOCKS, LAYERS = 8, 2


def build(steps: int) -> Trace:
    strings = ["", "1", "nn.Module: Net_0"] + [f"nn.Module: Block_{b}" for b in range(BLOCKS)]
    strings += [f"nn.Module: Linear_{i}" for i in range(BLOCKS * LAYERS)]
    strings += ["aten::linear", "cudaLaunchKernel", "gemm"] + [f"ProfilerStep#{s}"
                                                                for s in range(steps)]
    sid = {s: i for i, s in enumerate(strings)}
    step_len = 10_000_000
    h_name, h_ts, h_dur, h_kind, h_ext = [], [], [], [], []
    for s in range(steps):
        t0 = s * step_len
        h_name += [sid[f"ProfilerStep#{s}"], sid["nn.Module: Net_0"]]
        h_ts += [t0, t0 + 1000]
        h_dur += [step_len - 10, step_len - 2000]
        h_kind += [HOST_ANNOTATION, HOST_PYTHON]
        h_ext += [-1, -1]
    base = np.repeat(np.arange(steps, dtype=np.int64) * step_len, BLOCKS * LAYERS)
    k = np.tile(np.arange(BLOCKS * LAYERS), steps)
    blk = k // LAYERS
    block_ts = np.arange(steps * BLOCKS) % BLOCKS * 1_000_000 + np.repeat(
        np.arange(steps) * step_len, BLOCKS) + 2000
    layer_ts = base + blk * 1_000_000 + 3000 + (k % LAYERS) * 400_000
    op_ts = layer_ts + 1000
    names = np.concatenate([
        np.array(h_name), np.tile([sid[f"nn.Module: Block_{b}"] for b in range(BLOCKS)], steps),
        np.array([sid[f"nn.Module: Linear_{i}"] for i in k.tolist()]),
        np.full(len(k), sid["aten::linear"])])
    ts = np.concatenate([np.array(h_ts), block_ts, layer_ts, op_ts])
    dur = np.concatenate([np.array(h_dur), np.full(steps * BLOCKS, 990_000),
                          np.full(len(k), 390_000), np.full(len(k), 300_000)])
    kind = np.concatenate([np.array(h_kind), np.full(steps * BLOCKS, HOST_PYTHON),
                           np.full(len(k), HOST_PYTHON), np.full(len(k), HOST_OP)])
    ext = np.concatenate([np.array(h_ext), np.full(steps * BLOCKS + len(k), -1),
                          np.arange(1, len(k) + 1)])
    n = len(ts)
    order = np.argsort(ts, kind="stable")
    host = HostOps.from_columns({
        "name": names[order], "ts": ts[order], "dur": dur[order],
        "pid": np.full(n, 1), "tid": np.full(n, 1), "kind": kind[order],
        "external_id": ext[order], "input_dims": np.full(n, -1), "call_stack": np.full(n, -1)})
    m = len(k)
    runtime = Runtimes.from_columns({
        "name": np.full(m, sid["cudaLaunchKernel"]), "ts": op_ts + 100, "dur": np.full(m, 50),
        "pid": np.full(m, 1), "tid": np.full(m, 1), "correlation": np.arange(1, m + 1),
        "external_id": np.arange(1, m + 1)})
    zeros = np.zeros(m)
    device = DeviceOps.from_columns({
        "name": np.full(m, sid["gemm"]), "ts": op_ts + 500, "dur": np.full(m, 200_000),
        "kind": np.zeros(m), "device": zeros, "stream": np.full(m, 7),
        "correlation": np.arange(1, m + 1), "external_id": np.arange(1, m + 1),
        "blocks_per_sm": zeros, "occupancy_pct": zeros, "grid_x": zeros, "grid_y": zeros,
        "grid_z": zeros, "block_x": zeros, "block_y": zeros, "block_z": zeros,
        "registers": zeros, "shared_mem": zeros, "bytes": zeros})
    # alloc at op start, free at op end; plus one leak per step
    a_ts = np.concatenate([op_ts + 10, op_ts + 250_000, np.arange(steps) * step_len + 1500])
    a_b = np.concatenate([np.full(m, 4096), np.full(m, -4096), np.full(steps, 1 << 20)])
    a_addr = np.concatenate([np.arange(m) % 64, np.arange(m) % 64, 10_000 + np.arange(steps)])
    o = np.argsort(a_ts, kind="stable")
    a_ts, a_b, a_addr = a_ts[o], a_b[o], a_addr[o]
    r = len(a_ts)
    memory = MemoryRecords.from_columns({
        "ts": a_ts, "device_type": np.ones(r), "device_id": np.zeros(r), "bytes": a_b,
        "addr": a_addr, "total_allocated": np.cumsum(a_b), "total_reserved": np.full(r, 1 << 30),
        "tid": np.full(r, 1)})

    def empty(cls: type) -> object:
        return cls.from_columns({c: np.empty(0) for c in cls.DTYPES})

    return Trace(meta=TraceMeta(path="synthetic", format="kineto", events=n + 2 * m + r),
                 strings=tuple(strings), host=host, runtime=runtime, device=device,
                 gpu_annotations=empty(GpuAnnotations), syncs=empty(Syncs),  # type: ignore[arg-type]
                 memory=memory)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, nargs="+", default=[500, 2000])
    args = p.parse_args()
    for steps in args.steps:
        trace = build(steps)
        links = Links(trace)
        tree = OpTree(trace, links)
        found = find_steps(trace, links)
        t0 = time.perf_counter()
        mem = memory_analysis(trace, found, tree)
        t1 = time.perf_counter()
        mods = module_analysis(trace, links, tree)
        t2 = time.perf_counter()
        print(f"steps {steps:>6}: host {len(trace.host):>9,}  memory records "
              f"{len(trace.memory):>9,}  memory {t1 - t0:6.2f} s  modules {t2 - t1:6.2f} s  "
              f"(peak {mem.devices[0].peak_allocated:,} B, {len(mods.nodes)} module paths)")


if __name__ == "__main__":
    main()
