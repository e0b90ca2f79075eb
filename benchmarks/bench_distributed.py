"""A 256-rank run through the process pool and a Dask LocalCluster: ranks/s, coordinator RSS.

The run is synthesised from the 8 real ranks of ../shared/traces/outside/param-dlrm-8rank:
rank r is worker r % 8 with its ``distributedInfo`` rewritten to rank r of 256 (so every file
has its own content hash and its own cache entry). Files go to benchmarks/data/run256/
(git-ignored). Each measurement runs in a fresh child process with an empty cache (cold:
parse + summarise) and then again on the warm cache; the coordinator's peak RSS is the
child's ``ru_maxrss`` (workers are separate processes and not counted).

    python benchmarks/bench_distributed.py [--ranks 256] [--workers 2] [--executors processes,dask]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE = Path(os.environ.get("STEPSCOPE_SHARED_TRACES", "/work/shared/traces")) / "outside" / \
    "param-dlrm-8rank"
DATA = ROOT / "benchmarks" / "data"


def synthesise(n: int) -> Path:
    out = DATA / f"run{n}"
    if out.exists() and len(list(out.glob("*.json"))) == n:
        return out
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(SOURCE.glob("worker*.pt.trace.json"))
    if not sources:
        sys.exit(f"source traces not found in {SOURCE}")
    texts = [p.read_text() for p in sources]
    info = re.compile(r'"distributedInfo":\s*\{[^}]*\}')
    for r in range(n):
        text = texts[r % len(texts)]
        new = f'"distributedInfo": {{"backend": "nccl", "rank": {r}, "world_size": {n}}}'
        (out / f"rank{r:04d}.pt.trace.json").write_text(info.sub(new, text, count=1))
    return out


def one(executor: str, directory: str, workers: int, cache: str) -> None:
    """Child: build the run report twice (cold, warm cache) and print JSON figures."""
    os.environ["XDG_CACHE_HOME"] = cache
    from stepscope.report.run import build_run_report, find_run

    run = find_run([directory])
    figures: dict[str, object] = {"executor": executor, "ranks": len(run.paths),
                                  "workers": workers}
    for label in ("cold", "warm"):
        t0 = time.perf_counter()
        rep = build_run_report(run, executor=executor, workers=workers)
        dt = time.perf_counter() - t0
        figures[f"{label}_s"] = round(dt, 2)
        figures[f"{label}_ranks_per_s"] = round(len(run.paths) / dt, 1)
    figures["coordinator_peak_rss_mb"] = round(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    figures["world_size"] = rep.distributed.world_size
    figures["top_straggler"] = rep.distributed.stragglers[0].rank if rep.distributed.stragglers \
        else None
    print(json.dumps(figures))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=256)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--executors", default="processes,dask")
    ap.add_argument("--one", nargs=3, metavar=("EXECUTOR", "DIR", "CACHE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        one(args.one[0], args.one[1], args.workers, args.one[2])
        return
    directory = synthesise(args.ranks)
    size = sum(p.stat().st_size for p in directory.glob("*.json"))
    print(f"{args.ranks} ranks, {size / 1e6:.0f} MB of trace JSON, {args.workers} workers")
    env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
    for executor in args.executors.split(","):
        with tempfile.TemporaryDirectory() as cache:
            proc = subprocess.run(
                [sys.executable, __file__, "--workers", str(args.workers), "--one", executor,
                 str(directory), cache], env=env, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"{executor}: failed\n{proc.stderr[-2000:]}")
            continue
        print(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
