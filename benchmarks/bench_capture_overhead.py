"""Overhead of the capture helpers per training step, against the bare loop of the same run.

Each case runs the same loop body ``--iters`` times, ``--repeats`` times; the figure is
the best (minimum) time per iteration, which is the least noisy estimate on a shared
machine. The body is a small matmul (a few µs, like one cheap training-step operation)
or nothing at all (``--body empty``: the pure per-call cost). Cases:

* ``bare``: the body alone;
* ``annotate`` (context manager) and ``@annotate`` (decorator), no profiler running:
  what every user pays all the time; compared with torch's ``record_function``, which
  costs the same whether or not a profiler runs;
* ``ThroughputMeter.step``: one meter step per iteration (``sync=False``);
* under a running ``torch.profiler`` (CPU activity, no shapes/stacks): ``bare`` and
  ``annotate`` again, so the recorded range's own cost shows next to the profiler's.

    python benchmarks/bench_capture_overhead.py               # matmul body
    python benchmarks/bench_capture_overhead.py --body empty  # per-call cost only
    python benchmarks/bench_capture_overhead.py --json        # machine-readable

Goal: idle ``annotate`` and ``ThroughputMeter.step`` each well under 1 µs per call.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from stepscope.capture.ranges import annotate
from stepscope.capture.throughput import ThroughputMeter

Loop = Callable[[int], None]


@dataclass(frozen=True)
class Result:
    case: str
    group: str  # "idle" or "profiling": which bare loop it is compared with
    us_per_iter: float
    overhead_ns: float  # per iteration, against the bare loop of its group
    ratio: float  # time per iteration / bare loop's


def make_body(kind: str) -> Callable[[], object]:
    if kind == "empty":
        return lambda: None
    a = torch.randn(32, 32)
    return lambda: torch.mm(a, a)


def loops(body: Callable[[], object]) -> dict[str, Loop]:
    region = annotate("region")
    meter = ThroughputMeter(batch_size=32, warmup=0)

    @annotate("decorated")
    def decorated() -> object:
        return body()

    def bare(n: int) -> None:
        for _ in range(n):
            body()

    def with_annotate(n: int) -> None:
        for _ in range(n):
            with region:
                body()

    def with_decorator(n: int) -> None:
        for _ in range(n):
            decorated()

    def with_record_function(n: int) -> None:
        for _ in range(n):
            with record_function("region"):
                body()

    def with_meter(n: int) -> None:
        meter.start()
        for _ in range(n):
            body()
            meter.step()

    return {"bare": bare, "annotate": with_annotate, "@annotate": with_decorator,
            "record_function (torch)": with_record_function, "ThroughputMeter.step": with_meter}


def best_us(loop: Loop, iters: int, repeats: int) -> float:
    loop(min(iters, 1000))  # warm caches and lazy initialisation
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter_ns()
        loop(iters)
        best = min(best, (time.perf_counter_ns() - start) / iters)
    return best / 1000.0


def measure(body_kind: str, iters: int, repeats: int, profiled_iters: int) -> list[Result]:
    cases = loops(make_body(body_kind))
    results: list[Result] = []
    idle = {name: best_us(loop, iters, repeats) for name, loop in cases.items()}
    results += _compare("idle", idle)
    # A fresh profiler per repeat keeps its event buffers (and memory) small.
    profiled: dict[str, float] = {}
    for name in ("bare", "annotate", "record_function (torch)"):
        best = float("inf")
        for _ in range(repeats):
            with profile(activities=[ProfilerActivity.CPU]):
                best = min(best, best_us(cases[name], profiled_iters, 1))
        profiled[name] = best
    results += _compare("profiling", profiled)
    return results


def _compare(group: str, times: dict[str, float]) -> list[Result]:
    bare = times["bare"]
    return [Result(name, group, t, (t - bare) * 1000.0, t / bare if bare else 0.0)
            for name, t in times.items()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--body", choices=["matmul", "empty"], default="matmul")
    parser.add_argument("--iters", type=int, default=50_000)
    parser.add_argument("--profiled-iters", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)  # a single-threaded body: stable numbers on a busy machine
    results = measure(args.body, args.iters, args.repeats, args.profiled_iters)
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=2))
        return
    print(f"body: {args.body}; best of {args.repeats}; torch {torch.__version__}")
    print(f"{'case':<26}{'group':<11}{'µs/iter':>10}{'overhead':>12}{'ratio':>8}")
    for r in results:
        print(f"{r.case:<26}{r.group:<11}{r.us_per_iter:>10.3f}"
              f"{r.overhead_ns:>9.0f} ns{r.ratio:>8.3f}")


if __name__ == "__main__":
    main()
