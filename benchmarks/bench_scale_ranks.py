"""A 1,000-rank run synthesised from real gloo rank files: time, coordinator RSS, the finding.

Source: the 4 real ranks of tests/data/distributed/moe_skew (CPU, gloo), where rank 3 is the
slow one (it receives 4x the MoE tokens and computes on them). Rank r of the synthetic run is
source rank r % 3 (a normal rank), except rank ``--slow`` (default 617), which is source rank
3. Every rank's times are stretched around its start by a factor in [0.95, 1.05] (seeded),
so no two ranks are identical, and its ``distributedInfo`` says rank r of N. The all-to-all
splits name 4 peers in a world of N: those calls cannot be placed in the traffic matrix, so
the run is read as data-parallel and the slow rank must come out as the straggler.

``--moe``: the all-to-all ops' split sizes are rewritten for N peers instead (every rank
dispatches 1 row to each rank and 4 to the slow rank; the combine sends them back), so the
coordinator builds the N x N traffic matrix and expert-imbalance must name the slow rank.

The report runs in a fresh child process (``stepscope report DIR --format json --no-cache``
with the process pool of ``--workers``); the coordinator's peak RSS is the child's
``ru_maxrss`` (workers are separate processes, each holding one trace at a time).

    python benchmarks/bench_scale_ranks.py [--ranks 1000] [--workers 2] [--slow 617] [--moe]
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "tests" / "data" / "distributed" / "moe_skew"
DATA = ROOT / "benchmarks" / "data"


def _stretch(doc: dict[str, Any], factor: float) -> None:
    events = doc["traceEvents"]
    t0 = min(e["ts"] for e in events if isinstance(e.get("ts"), (int, float)))
    for e in events:
        if isinstance(e.get("ts"), (int, float)):
            e["ts"] = t0 + (e["ts"] - t0) * factor
        if isinstance(e.get("dur"), (int, float)):
            e["dur"] = e["dur"] * factor


def _moe_splits(doc: dict[str, Any], n: int, slow: int, rank: int) -> None:
    """Rewrite each ``c10d::alltoall_base_`` for n peers: dispatch sends 1 row to every rank
    and 4 to ``slow``; the combine sends back what came in."""
    send = [4 if j == slow else 1 for j in range(n)]
    recv = [4 if rank == slow else 1] * n
    for e in doc["traceEvents"]:
        if e.get("name") != "c10d::alltoall_base_":
            continue
        a = e["args"]
        row = a["Input Dims"][1][1]
        splits = json.loads(a["Concrete Inputs"][4])  # the source's input splits
        dispatch = splits != splits[:1] * len(splits)  # uneven: the dispatch (4x to rank 3)
        ins, outs = (send, recv) if dispatch else (recv, send)
        a["Concrete Inputs"][3], a["Concrete Inputs"][4] = str(outs), str(ins)
        a["Input Dims"][0], a["Input Dims"][1] = [sum(outs), row], [sum(ins), row]


def synthesise(n: int, slow: int, moe: bool = False) -> Path:
    out = DATA / f"scale{n}_slow{slow}{'_moe' if moe else ''}"
    if out.exists() and len(list(out.glob("*.json"))) == n:
        return out
    out.mkdir(parents=True, exist_ok=True)
    sources = sorted(SOURCE.glob("rank*.pt.trace.json.gz"))
    texts = [gzip.decompress(p.read_bytes()).decode() for p in sources]
    rng = random.Random(0)
    for r in range(n):
        doc = json.loads(texts[3 if r == slow else r % 3])
        _stretch(doc, rng.uniform(0.95, 1.05))
        if moe:
            _moe_splits(doc, n, slow, r)
        doc["distributedInfo"] = {"backend": "gloo", "rank": r, "world_size": n}
        (out / f"rank{r:04d}.pt.trace.json").write_text(json.dumps(doc))
    return out


def child(directory: str, workers: int) -> None:
    from stepscope.cli.main import main as cli

    t0 = time.perf_counter()
    sink = Path(directory).with_suffix(".report.json")
    with sink.open("w") as f, contextlib.redirect_stdout(f):
        code = cli(["report", directory, "--format", "json", "--no-cache", "--workers",
                    str(workers)])
    wall = time.perf_counter() - t0
    report = json.loads(sink.read_text())
    findings = [(f["id"], f["title"]) for f in report["findings"]]
    a2a = report["distributed"]["all_to_all"]
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(json.dumps({
        "exit": code, "wall_s": round(wall, 2),
        # CPU of the coordinator and its (finished) workers: steadier than wall on a shared host
        "cpu_s": round(own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime, 1),
        "coordinator_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                                         / 1024, 1),
        "world_size": report["distributed"]["world_size"],
        "json_mb": round(sink.stat().st_size / 1e6, 1),
        "all_to_all": None if a2a is None else {"ranks": len(a2a["ranks"]),
                                                 "hot_ranks": a2a["hot_ranks"],
                                                 "imbalance": a2a["imbalance"]},
        "findings": findings,
    }))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--slow", type=int, default=617)
    ap.add_argument("--moe", action="store_true", help="all-to-all splits over all N ranks")
    ap.add_argument("--child", metavar="DIR", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.workers)
        return
    directory = synthesise(args.ranks, args.slow, args.moe)
    size = sum(p.stat().st_size for p in directory.glob("*.json"))
    print(f"{args.ranks} ranks ({size / 1e6:.0f} MB of trace JSON), slow rank {args.slow}, "
          f"{args.workers} workers")
    env = os.environ | {"PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.run([sys.executable, __file__, "--workers", str(args.workers),
                           "--child", str(directory)], env=env, capture_output=True, text=True,
                          check=False)
    if proc.returncode != 0:
        sys.exit(f"failed:\n{proc.stderr[-2000:]}")
    print(proc.stdout.strip().splitlines()[-1])


if __name__ == "__main__":
    main()
