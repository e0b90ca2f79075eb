"""Capture the what-if validation's CPU before/after pairs (docs/whatif.md, "Validation").

Each pair is one workload run twice under ``stepscope.profile``: as written ("before") and
with one fix applied ("after"). Every run builds its workload afresh (one intra-op thread,
fixed seeds) and is repeated ``--repeats`` times, interleaved with the other variants; the
measured step of a run is the mean of its ProfilerStep windows as ``stepscope`` measures
them (analysis/events/steps.py), and the trace kept is the fastest repeat's (``_keep``).
Beside the traces, ``run.json`` records every repeat's step (the spread), the median and
the kept trace's step, and ``pairs.json`` the what-if that should predict each fix.

    python benchmarks/whatif/capture_pairs.py tests/data/whatif              # all pairs
    python benchmarks/whatif/capture_pairs.py OUT --pairs ddp_bucket --repeats 5

The machine this was written on has 2 cores shared with other jobs: measured times are
noisy, hence the repeats; the spread in ``run.json`` says by how much.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

WAIT, WARMUP, ACTIVE = 1, 1, 5  # profiler schedule: 5 recorded steps after 2 unrecorded ones
DEMO_ACTIVE = 3  # the demo's slow run records ~11k host ops per step
SEED = 0
# Shapes, Python stacks and memory events off (stepscope.profile records them): the replay
# uses none of them, and without them every fixture stays under 1 MB gzip.
PROFILE_OPTIONS: dict[str, Any] = {"with_stack": False, "profile_memory": False,
                                   "record_shapes": False}


@dataclass(frozen=True)
class Pair:
    what: str  # the workload and the fix, in words
    before: str  # variant names understood by _run
    after: str
    apply: tuple[str, ...]  # the what-if that models the fix (stepscope whatif --apply ...)
    rule: str  # the advice rule whose fix this is
    ranks: int = 1


PAIRS: dict[str, Pair] = {
    "loader_io": Pair(
        "MLP fed by a Dataset whose samples take 0.4 ms each to read (a sleep standing for "
        "storage latency: the process waits, the CPU is free); DataLoader num_workers 0 -> 2",
        "loader_io:0", "loader_io:2", ("drop_dataloader_wait",), "input-pipeline"),
    "sync": Pair(
        "MLP logging loss.item() and the predictions' .tolist() every step -> no logging "
        "(on CPU there is no asynchronous device queue: .item() waits for nothing)",
        "sync:1", "sync:0", ("drop_sync",), "host-sync"),
    "copies": Pair(
        "MLP whose forward does redundant copies after every layer (float64 round trip, "
        "transpose().contiguous() twice, clone()) -> without them",
        "copies:1", "copies:0", ("materialising-copies",), "materialising-copies"),
    "optimizer": Pair(
        "Adam over 96 small parameters: foreach=False (per-parameter loop) -> fused=True",
        "optimizer:loop", "optimizer:fused", ("unfused-optimizer",), "unfused-optimizer"),
    "ddp_bucket": Pair(
        "DDP on gloo, 2 processes, 50 gradients of 64 KB: bucket_cap_mb=0.01 (one all-reduce "
        "per gradient) -> 25 (the default: two buckets)",
        "ddp:0.01", "ddp:25", ("overlap_comm",), "exposed-communication", ranks=2),
    "demo_workers": Pair(
        "stepscope demo, one fix: DataLoader num_workers 0 -> 2 (samples still decoded per "
        "step, now in 2 worker processes competing with training for the cores)",
        "demo:slow", "demo:workers", ("drop_dataloader_wait",), "input-pipeline"),
    "demo_predecode": Pair(
        "stepscope demo, one fix: decode the dataset once before training (num_workers=0)",
        "demo:slow", "demo:predecode", ("drop_dataloader_wait",), "input-pipeline"),
    "demo_logging": Pair(
        "stepscope demo, one fix: log loss/accuracy every 50 steps, not every step",
        "demo:slow", "demo:logging", ("drop_sync",), "host-sync"),
    "demo_all": Pair(
        "stepscope demo, all fixes together (its 'after' run)",
        "demo:slow", "demo:fixed", ("drop_dataloader_wait", "drop_sync"), "input-pipeline"),
}


# --------------------------------------------------------------------------- workloads
# Everything below runs in the child process (``--one``): torch is imported there only.

def _mlp(width: int, depth: int, classes: int = 10) -> Any:
    from torch import nn

    layers: list[nn.Module] = []
    for _ in range(depth):
        layers += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*layers, nn.Linear(width, classes))


def _profiled_loop(batches: Iterator[tuple[Any, Any]], step: Callable[[Any, Any], None],
                   logdir: str, run: str, rank: int | None = None) -> list[str]:
    """``WAIT + WARMUP + ACTIVE`` steps under stepscope.profile; the traces written."""
    from stepscope.capture.profiler import profile

    with profile(logdir, run=run, wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1,
                 rank=rank, **PROFILE_OPTIONS) as prof:
        for i, (x, y) in enumerate(batches):
            step(x, y)
            prof.step()
            if i + 1 >= WAIT + WARMUP + ACTIVE:
                break
    return prof.trace_paths


class _SlowStorage:
    """Samples that take ``latency`` seconds each to read (a sleep: I/O, not CPU)."""

    def __init__(self, x: Any, y: Any, latency: float) -> None:
        self.x, self.y, self.latency = x, y, latency

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> tuple[Any, Any]:
        time.sleep(self.latency)
        return self.x[i], self.y[i]


def _loader_io(workers: int, logdir: str, run: str) -> list[str]:
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader

    batch, width = 32, 512
    n = batch * (WAIT + WARMUP + ACTIVE + 1)
    x, y = torch.randn(n, width), torch.randint(0, 10, (n,))
    model = _mlp(width, 6)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(_SlowStorage(x, y, 0.4e-3), batch_size=batch, num_workers=workers,
                        persistent_workers=workers > 0,
                        prefetch_factor=4 if workers else None,
                        generator=torch.Generator().manual_seed(SEED))

    def step(xb: Any, yb: Any) -> None:
        loss = F.cross_entropy(model(xb), yb)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    try:
        return _profiled_loop(iter(loader), step, logdir, run)
    finally:
        del loader


def _batches(width: int, batch: int) -> Iterator[tuple[Any, Any]]:
    import torch

    g = torch.Generator().manual_seed(SEED)
    while True:
        yield torch.randn(batch, width, generator=g), torch.randint(0, 10, (batch,), generator=g)


def _sync(log: bool, logdir: str, run: str) -> list[str]:
    import torch
    import torch.nn.functional as F

    model = _mlp(512, 6)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sink: list[Any] = []

    def step(xb: Any, yb: Any) -> None:
        out = model(xb)
        loss = F.cross_entropy(out, yb)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if log:
            sink.append((loss.item(), out.argmax(1).tolist(), out.detach().tolist()))

    return _profiled_loop(_batches(512, 64), step, logdir, run)


def _copies(redundant: bool, logdir: str, run: str) -> list[str]:
    import torch
    import torch.nn.functional as F
    from torch import nn

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(256, 256) for _ in range(4))
            self.head = nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            for layer in self.layers:
                x = F.relu(layer(x))
                if redundant:
                    x = x.to(torch.float64).to(torch.float32)
                    x = x.t().contiguous().t().contiguous()
                    x = x.clone()
            return self.head(x)  # type: ignore[no-any-return]

    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(xb: Any, yb: Any) -> None:
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return _profiled_loop(_batches(256, 512), step, logdir, run)


def _optimizer(kind: str, logdir: str, run: str) -> list[str]:
    import torch
    import torch.nn.functional as F

    model = _mlp(32, 47)  # 48 Linear layers: 96 parameters
    if kind == "loop":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)

    def step(xb: Any, yb: Any) -> None:
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return _profiled_loop(_batches(32, 16), step, logdir, run)


def _ddp_worker(rank: int, world: int, port: str, bucket_mb: float, logdir: str,
                run: str) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP

    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(SEED)
    model = DDP(_mlp(128, 24), bucket_cap_mb=bucket_mb)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(xb: Any, yb: Any) -> None:
        F.cross_entropy(model(xb), yb).backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    _profiled_loop(_batches(128, 256), step, logdir, run, rank=rank)
    dist.barrier()
    dist.destroy_process_group()


def _ddp(bucket_mb: float, logdir: str, run: str) -> list[str]:
    import socket

    import torch.multiprocessing as mp

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    mp.spawn(_ddp_worker, args=(2, port, bucket_mb, logdir, run), nprocs=2)
    return sorted(glob.glob(os.path.join(logdir, run, "*.pt.trace.json*")))


def _demo(which: str, logdir: str, run: str) -> list[str]:
    import dataclasses
    import functools

    from stepscope.capture.profiler import profile
    from stepscope.demo import train
    from stepscope.demo.train import FIXED, SLOW, train_profiled

    # the demo's own loop, with this script's profiler options (fixtures under 1 MB)
    train.profile = functools.partial(profile, **PROFILE_OPTIONS)  # type: ignore[assignment]

    variant = {  # the slow variant with one of the fixed variant's changes, or all of them
        "slow": SLOW,
        "fixed": FIXED,
        "workers": dataclasses.replace(SLOW, num_workers=FIXED.num_workers),
        "predecode": dataclasses.replace(SLOW, preprocess_up_front=True),
        "logging": dataclasses.replace(SLOW, log_every=FIXED.log_every),
    }[which]
    variant = dataclasses.replace(variant, name=run)  # the run folder
    # the demo's own schedule (wait 1, warm-up 1) with this script's number of steps
    return [train_profiled(variant, logdir, steps=WAIT + WARMUP + DEMO_ACTIVE, wait=WAIT,
                           warmup=WARMUP, device="cpu", seed=SEED).trace]


def _run(variant: str, logdir: str, run: str) -> list[str]:
    import torch

    from stepscope.capture.native_noise import quiet_native_profiler

    torch.manual_seed(SEED)
    torch.set_num_threads(1)  # as the demo: immune to OpenMP spin-waits on a shared host
    kind, _, arg = variant.partition(":")
    with quiet_native_profiler():
        if kind == "loader_io":
            return _loader_io(int(arg), logdir, run)
        if kind == "sync":
            return _sync(arg == "1", logdir, run)
        if kind == "copies":
            return _copies(arg == "1", logdir, run)
        if kind == "optimizer":
            return _optimizer(arg, logdir, run)
        if kind == "ddp":
            return _ddp(float(arg), logdir, run)
        if kind == "demo":
            return _demo(arg, logdir, run)
    raise SystemExit(f"unknown variant {variant!r}")


# --------------------------------------------------------------------------- measuring

def measured_step_us(trace_path: str) -> tuple[float, list[float]]:
    """Mean step of a trace and each step, in µs: stepscope's ProfilerStep windows (no
    warm-up stall to leave out on CPU traces: it is a long CUDA/HIP runtime call)."""
    from stepscope import load
    from stepscope.analysis.events.steps import find_steps

    steps = find_steps(load(trace_path)).steps
    each = [s.duration / 1e3 for s in steps]
    return statistics.fmean(each), each


def _runs(variants: list[str], repeats: int, logdir: str) -> dict[str, list[list[str]]]:
    """Every repeat of every variant, interleaved (before, after, before, ...) so that the
    two runs of a pair see the same drift of the host's load; one child process for all
    (one torch import: on a loaded 2-core host it costs more than a run)."""
    out = subprocess.run([sys.executable, __file__, "--runs", logdir, str(repeats), *variants],
                         check=True, stdout=subprocess.PIPE, text=True)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _child(logdir: str, repeats: int, variants: list[str]) -> dict[str, list[list[str]]]:
    runs: dict[str, list[list[str]]] = {v: [] for v in variants}
    for r in range(repeats):
        for variant in variants:
            t0 = time.perf_counter()
            runs[variant].append(_run(variant, logdir, f"{run_dir_name(variant)}-{r}"))
            print(f"  {variant} repeat {r}: ran in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
    return runs


def run_dir_name(variant: str) -> str:
    return variant.replace(":", "-").replace(".", "_")


def _keep(variant: str, runs: list[tuple[float, list[float], list[str]]],
          dest: str) -> dict[str, Any]:
    """Copy the fastest repeat's traces to ``dest``; ``run.json`` records all repeats.

    The fastest, not the median: on a shared host other jobs only ever add time, so the
    least disturbed repeat is the best estimate of the run itself (as ``timeit`` advises);
    the median and the spread are recorded beside it.
    """
    means = [m for m, _, _ in runs]
    kept = min(range(len(runs)), key=lambda i: means[i])
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    names = []
    for rank, path in enumerate(runs[kept][2]):
        name = f"rank{rank}.pt.trace.json.gz"
        shutil.copyfile(path, os.path.join(dest, name))
        names.append(name)
    median = statistics.median(means)
    record = {
        "variant": variant,
        "traces": names,
        "trace_step_us": round(runs[kept][0], 1),
        "trace_steps_us": [round(v, 1) for v in runs[kept][1]],
        "kept_repeat": kept,
        "median_step_us": round(median, 1),
        "repeats_step_us": [round(m, 1) for m in means],
        "spread_pct": round(100 * (max(means) - min(means)) / median, 1),
    }
    with open(os.path.join(dest, "run.json"), "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    return record


def capture(out: str, names: list[str], repeats: int) -> None:
    """Run each variant the pairs need once (``repeats`` times); write ``pairs.json``."""
    import torch

    variants = list(dict.fromkeys(v for n in names for v in (PAIRS[n].before, PAIRS[n].after)))
    with tempfile.TemporaryDirectory(prefix="whatif-") as scratch:
        for variant, repeated in _runs(variants, repeats, scratch).items():
            runs = []
            for traces in repeated:
                mean, each = measured_step_us(traces[0])  # rank 0: DDP steps are in lock step
                runs.append((mean, each, traces))
            print(f"{variant}: " + ", ".join(f"{m / 1e3:.2f}" for m, _, _ in runs)
                  + " ms/step", file=sys.stderr)
            _keep(variant, runs, os.path.join(out, "runs", run_dir_name(variant)))
    index = os.path.join(out, "pairs.json")
    doc: dict[str, Any] = {"pairs": {}}
    if os.path.exists(index):
        with open(index) as f:
            doc = json.load(f)
    for name in names:
        pair = PAIRS[name]
        doc["pairs"][name] = {
            "what": pair.what, "rule": pair.rule, "apply": list(pair.apply),
            "before": f"runs/{run_dir_name(pair.before)}",
            "after": f"runs/{run_dir_name(pair.after)}",
            "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
    doc.update({
        "schema": "stepscope.whatif-pairs/1",
        "schedule": {"wait": WAIT, "warmup": WARMUP, "active": ACTIVE,
                     "active_demo": DEMO_ACTIVE},
        "profile": PROFILE_OPTIONS, "seed": SEED,
        "torch": torch.__version__, "intra_op_threads": 1, "host_cpus": os.cpu_count(),
    })
    doc.pop("repeats", None)  # per run now (run.json)
    doc["pairs"] = {k: doc["pairs"][k] for k in PAIRS if k in doc["pairs"]}
    with open(index, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--runs":
        print(json.dumps(_child(sys.argv[2], int(sys.argv[3]), sys.argv[4:])))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", help="folder for the pairs (tests/data/whatif)")
    ap.add_argument("--pairs", default=",".join(PAIRS), help="comma-separated pair names")
    ap.add_argument("--repeats", type=int, default=21,
                    help="runs of each variant (the fastest is kept; default 21)")
    args = ap.parse_args()
    names = [n for n in args.pairs.split(",") if n]
    unknown = [n for n in names if n not in PAIRS]
    if unknown:
        ap.error(f"unknown pairs: {', '.join(unknown)} (known: {', '.join(PAIRS)})")
    capture(args.out, names, args.repeats)


if __name__ == "__main__":
    main()
