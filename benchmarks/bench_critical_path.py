"""Cost of the dependency graph, the critical path and the what-if replays against the rest
of the analyses, on a large generated trace (issue 22: graph + critical path + all what-ifs
of the report add at most the time the other analyses take).

In one process, on the trace read from the Arrow cache (reading is not timed; a fresh copy
per repeat, so that nothing memoised on it carries over):

* ``other analyses``: ``run_analyses`` minus its critical-path part, plus the advisor's
  rules without replay (``advise(..., replay=False)``): everything the report computed
  before issue 22;
* ``critical path``: every step's (HTA's definition), timed inside ``run_analyses``;
* ``report's replays``: what the report adds to the advisor: one graph over the steps,
  the unmodified replay, the replay of each finding's fix and of all of them together
  (``advice.replay.replay_findings``);
* ``every transform``: the same graph replayed with each transform on its own and with
  every rule's together (10 replays; more than any report runs);
* ``ratio`` = (critical path + report's replays) / other analyses (goal <= 1), and
  ``ratio (every transform)``; with ``--repeat N`` every part is timed N times, the parts
  interleaved, and the medians are used (the machine's load drifts: a part timed alone
  under a burst of other jobs would make a ratio of noise). Wall and CPU seconds (this
  process's ``time.process_time``: on a shared machine the steadier figure) both.

    python benchmarks/bench_critical_path.py                 # 300M
    python benchmarks/bench_critical_path.py --sizes 100M 1G --json
    python benchmarks/bench_critical_path.py --sizes 100M 300M 1G --repeat 5   # medians
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_large_trace import generate, parse_size, read_source  # noqa: E402

T = TypeVar("T")

TRANSFORMS = ("drop_dataloader_wait", "drop_sync", "async_h2d", "scale_kernels:tensor_cores",
              "remove_launch_overhead", "fuse_elementwise", "fuse_optimizer", "overlap_comm")


def _trace(size: int) -> Path:
    out = HERE / "data" / f"trace_{size // 1_000_000}M.json"
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        generate(read_source(None), size, out)
    return out


def measure(path: Path, repeat: int = 1) -> dict[str, float]:
    """Each part timed ``repeat`` times, interleaved (other analyses, critical path, rules,
    replays, again and again) so that every part sees the same drift of the machine's load;
    the medians are reported, and the ratio of the medians."""
    import stepscope
    from stepscope import forked

    stepscope.load(str(path))  # fills the cache on the first run
    # the parts are timed one by one in this process: no forked children (measure_added
    # times what they add with the children on, as a report runs)
    real_can_fork = forked.can_fork
    setattr(forked, "can_fork", lambda: False)  # noqa: B010
    try:
        return _measure_parts(path, repeat)
    finally:
        setattr(forked, "can_fork", real_can_fork)  # noqa: B010


def _measure_parts(path: Path, repeat: int) -> dict[str, float]:
    from statistics import median

    import stepscope
    from stepscope.advice import advise
    from stepscope.advice.replay import replay_findings
    from stepscope.analysis import suite
    from stepscope.analysis.graph.fixes import RULE_TRANSFORMS
    from stepscope.analysis.graph.summary import critical_paths
    from stepscope.analysis.graph.transforms import parse
    from stepscope.analysis.graph.whatif import Replayer
    from stepscope.analysis.suite import Analyses, run_analyses

    trace = stepscope.load(str(path))
    names = ("other", "critical_path", "report_replays", "every_transform")
    wall: dict[str, list[float]] = {k: [] for k in names}
    cpu: dict[str, list[float]] = {k: [] for k in names}

    def timed(key: str, fn: Callable[[], T]) -> T:
        w, c = time.perf_counter(), time.process_time()
        out = fn()
        wall[key].append(time.perf_counter() - w)
        cpu[key].append(time.process_time() - c)
        return out

    for _ in range(repeat):
        # a fresh copy from the cache each time (not timed): the string-table masks the
        # analyses memoise on a trace start empty, as in one report
        trace = stepscope.load(str(path))
        def timed_paths(*args: Any, **kw: Any) -> Any:
            return timed("critical_path", lambda: critical_paths(*args, **kw))

        # the critical paths run_analyses computes, timed where they run
        setattr(suite, "critical_paths", timed_paths)  # noqa: B010
        try:
            a: Analyses = timed("other", lambda t=trace: run_analyses(t))
        finally:
            setattr(suite, "critical_paths", critical_paths)  # noqa: B010
        wall["other"][-1] -= wall["critical_path"][-1]
        cpu["other"][-1] -= cpu["critical_path"][-1]
        w0, c0 = time.perf_counter(), time.process_time()
        findings = advise(a, replay=False)
        wall["other"][-1] += time.perf_counter() - w0
        cpu["other"][-1] += time.process_time() - c0
        replayed, _ = timed("report_replays", lambda a=a, f=findings: replay_findings(a, f))

        def every(a: Analyses = a) -> Replayer:
            rp = Replayer(a.trace, a.links, list(a.windows))
            for spec in TRANSFORMS:
                rp.run((parse(spec),))
            rp.run(tuple(parse(s) for s in dict.fromkeys(RULE_TRANSFORMS.values())))
            return rp

        rp = timed("every_transform", every)
    row = {"events": float(trace.meta.events), "steps": float(len(a.steps.steps)),
           "graph_nodes": float(2 * rp.graph.events),
           "replayed_findings": float(sum(f.method == "replay" for f in replayed)),
           "repeats": float(repeat)}
    for label, d in (("", wall), ("cpu_", cpu)):
        med = {k: median(v) for k, v in d.items()}
        other = med["other"]
        row.update({f"{label}{k}_s": v for k, v in med.items()})
        row[f"{label}ratio"] = ((med["critical_path"] + med["report_replays"]) / other
                                if other else float("nan"))
        row[f"{label}ratio_every_transform"] = ((med["critical_path"] + med["every_transform"])
                                                / other if other else float("nan"))
        per = [(c + r) / o for c, r, o in zip(d["critical_path"], d["report_replays"],
                                              d["other"], strict=True) if o]
        row[f"{label}median_ratio"] = median(per) if per else float("nan")
        row[f"{label}max_ratio"] = max(per, default=float("nan"))
    return row


def measure_added(path: Path, repeat: int) -> dict[str, float]:
    """Wall seconds the critical paths and the report's replays add to a report as it runs
    (forked children on, stepscope.forked): ``build_report`` as is, against the same with
    the critical paths off and the findings' savings left as the rules' bounds; beside it,
    the wall time of the other analyses and the rules alone. Interleaved, medians."""
    from statistics import median

    import stepscope
    from stepscope import advice
    from stepscope.analysis import suite
    from stepscope.analysis.graph.summary import critical_paths
    from stepscope.report.build import build_report

    full: list[float] = []
    bare: list[float] = []
    other: list[float] = []
    real_replayed = advice.advise_replayed

    def bounds_only(a: Any, rules: Any = None, *, replay: bool = True) -> Any:
        return real_replayed(a, rules, replay=False)

    for _ in range(repeat):
        trace = stepscope.load(str(path))
        t = time.perf_counter()
        build_report(trace, monitor=None)
        full.append(time.perf_counter() - t)
        trace = stepscope.load(str(path))
        setattr(suite, "critical_paths", lambda *a, **k: None)  # noqa: B010
        setattr(advice, "advise_replayed", bounds_only)  # noqa: B010
        try:
            t = time.perf_counter()
            a = suite.run_analyses(trace)
            advice.advise(a, replay=False)
            other.append(time.perf_counter() - t)
            trace = stepscope.load(str(path))
            t = time.perf_counter()
            build_report(trace, monitor=None)
            bare.append(time.perf_counter() - t)
        finally:
            setattr(suite, "critical_paths", critical_paths)  # noqa: B010
            setattr(advice, "advise_replayed", real_replayed)  # noqa: B010
    f, b, o = median(full), median(bare), median(other)
    return {"report_s": f, "report_without_s": b, "added_s": f - b, "other_wall_s": o,
            "added_ratio": (f - b) / o if o else float("nan")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=parse_size, default=[parse_size("300M")])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--repeat", type=int, default=1,
                    help="time each part this many times, interleaved; medians reported")
    args = ap.parse_args(argv)
    rows = []
    for size in args.sizes:
        path = _trace(size)
        row = {"size_mb": size / 1e6, **measure(path, args.repeat),
               **measure_added(path, args.repeat)}
        rows.append(row)
        if not args.json:
            print(f"{row['size_mb']:.0f} MB, {row['events']:.0f} events, {row['steps']:.0f} "
                  f"steps, {row['graph_nodes']:.0f} graph nodes, {row['repeats']:.0f} repeats "
                  f"(medians), {row['replayed_findings']:.0f} replayed findings")
            for label, what in (("", "wall"), ("cpu_", "CPU")):
                print(f"  {what}: other analyses {row[label + 'other_s']:.2f} s, critical path "
                      f"{row[label + 'critical_path_s']:.2f} s, report's replays "
                      f"{row[label + 'report_replays_s']:.2f} s, ratio {row[label + 'ratio']:.2f} "
                      f"(per repeat: median {row[label + 'median_ratio']:.2f}, max "
                      f"{row[label + 'max_ratio']:.2f}); every transform "
                      f"{row[label + 'every_transform_s']:.2f} s, ratio "
                      f"{row[label + 'ratio_every_transform']:.2f}")
            print(f"  added to a report (wall, forked children on): report "
                  f"{row['report_s']:.2f} s, without critical paths and replays "
                  f"{row['report_without_s']:.2f} s: they add {row['added_s']:.2f} s against "
                  f"{row['other_wall_s']:.2f} s of other analyses, ratio "
                  f"{row['added_ratio']:.2f}")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
