"""Speed of ``stepscope diff``'s comparison (after both runs are summarised).

Prints the time of ``diff_runs`` on synthetic summaries with K kernels x S steps a side
(every kernel with per-step samples, so every row gets its significance test), and, when
``../shared/traces`` is present, of a whole ``stepscope diff`` of the ResNet-50 0 vs 4
worker traces (reading, analysing both, comparing, rendering JSON).

    python benchmarks/bench_diff.py
    python benchmarks/bench_diff.py --kernels 3000 --steps 60 200

Goal: the comparison costs far less than reading the traces (<= 1 s for 3,000 kernels x
60 steps on 2 cores).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from stepscope.analysis.compare.diff import ItemSummary, RunSummary, diff_runs
from stepscope.analysis.trace.breakdown import CATEGORIES

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("STEPSCOPE_SHARED_TRACES", ROOT.parent / "shared" / "traces"))


def summary(kernels: int, steps: int, seed: int) -> RunSummary:
    rng = np.random.default_rng(seed)
    ks = tuple(
        ItemSummary(f"kernel_{i}", steps, 0.0, 10.0 * steps,
                    per_step=tuple(rng.normal(10.0, 0.5, steps).tolist()))
        for i in range(kernels)
    )
    return RunSummary(
        label=f"synthetic-{seed}", kind="trace",
        steps=tuple(str(i) for i in range(steps)),
        step_us=tuple(rng.normal(10_000.0, 100.0, steps).tolist()),
        category_us={c: tuple(rng.normal(1_000.0, 20.0, steps).tolist()) for c in CATEGORIES},
        operators=(), operators_by_shape=(), kernels=ks, gpu={}, findings=(),
    )


def best_of(fn: object, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kernels", type=int, nargs="+", default=[300, 3000])
    ap.add_argument("--steps", type=int, nargs="+", default=[6, 60])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    print(f"{'kernels':>8} {'steps':>6} {'diff_runs':>10}")
    for k in args.kernels:
        for s in args.steps:
            a, b = summary(k, s, 1), summary(k, s, 2)
            b = dataclasses.replace(b, label="new")
            t = best_of(lambda a=a, b=b: diff_runs(a, b), args.repeat)
            print(f"{k:>8} {s:>6} {t * 1000:>8.0f} ms")
    nw = SHARED / "kineto_resnet50"
    if nw.exists():
        base = sorted((nw / "num_workers_0").glob("*.json.gz"))[0]
        new = sorted((nw / "num_workers_4").glob("*.json.gz"))[0]
        code = "from stepscope.cli.main import entry_point; entry_point()"
        for flag in ("--no-cache", ""):
            argv = ["diff", str(base), str(new), "--format", "json", *([flag] if flag else [])]
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", code, *argv], check=True,
                           stdout=subprocess.DEVNULL)
            label = "no cache" if flag else "cached"
            print(f"stepscope diff ResNet-50 nw0 vs nw4 ({label}): "
                  f"{time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    main()
