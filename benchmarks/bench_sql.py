"""Query speed of ``stepscope sql`` on a large trace once its Arrow cache exists.

The input is ``gen_large_trace.py``'s trace (default 1 GB, generated when missing) and a
cache of its own (``benchmarks/data/sql-cache/<input>``), filled first by one
``stepscope.load`` (timed: with ``--fresh-cache``, hash + parse + Arrow write). Then, for
each query, best of ``--repeat``:

* ``cli``: wall time of ``stepscope sql FILE QUERY --format json`` in a fresh process
  (interpreter start, imports, cached load, building the named tables, DuckDB, output);
* in one fresh process, split: ``load`` (``open_input``: the memory-mapped cache),
  ``first`` (the first query: the tables it names are built, then DuckDB runs) and
  ``again`` (the same query on the same input: DuckDB alone over the built Arrow tables).

Queries: a kernel scan (count and total), the top kernels by time (names resolved through
the dictionary), and kernel time per launching operator (a join with ``links``).

    python benchmarks/bench_sql.py                 # 1 GB, best of 3
    python benchmarks/bench_sql.py --size 300M --repeat 2 --json
    python benchmarks/bench_sql.py --nsys-kernels 10000000   # also bench_nsys.py's export

The Kineto trace replicates a distributed training step, so only ~8 % of its events are
kernels (248k of 3.2 M at 1 GB); ``--nsys-kernels N`` adds ``bench_nsys.py``'s synthetic
Nsight Systems export with N kernels (each with its launch), a kernel-heavy input.

Goal: the kernel scan of a 1 GB trace answers in under a second once the cache exists.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from gen_large_trace import generate, parse_size, read_source  # noqa: E402

QUERIES = {
    "kernel scan": "SELECT count(*) AS kernels, sum(dur_ns) AS total_ns FROM kernels",
    "top kernels": "SELECT name, count(*) AS n, sum(dur_us) AS us FROM kernels "
                   "GROUP BY name ORDER BY us DESC, name LIMIT 10",
    "per operator": "SELECT l.op, sum(k.dur_us) AS us FROM kernels k JOIN links l "
                    "ON l.device_op_id = k.id GROUP BY l.op ORDER BY us DESC, l.op LIMIT 10",
}
CLI = [sys.executable, "-c", "import sys; from stepscope.cli.main import main; sys.exit(main())"]
LOAD = "import stepscope, sys; stepscope.load(sys.argv[1])"
SPLIT = r"""
import json, sys, time
t0 = time.perf_counter()
from stepscope.query.engine import open_input, run_sql
t1 = time.perf_counter()
inp = open_input(sys.argv[1])
t2 = time.perf_counter()
first = run_sql(inp, sys.argv[2])
t3 = time.perf_counter()
again = run_sql(inp, sys.argv[2])
t4 = time.perf_counter()
assert first.equals(again)
print(json.dumps({"import": t1 - t0, "load": t2 - t1, "first": t3 - t2, "again": t4 - t3,
                  "rows": first.num_rows, "answer": str(first.slice(0, 1).to_pylist())}))
"""


def _run(cmd: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t0
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:4]}... failed: {done.stderr.strip()[-500:]}")
    return wall, done.stdout


def bench(path: Path, repeat: int, fresh: bool) -> dict[str, object]:
    cache = HERE / "data" / "sql-cache" / path.stem
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    env.pop("STEPSCOPE_DEBUG", None)
    first_load, _ = _run([sys.executable, "-c", LOAD, str(path)], env)  # fills the cache
    out: dict[str, object] = {"size_mb": round(path.stat().st_size / 1e6),
                              "first_load_s": round(first_load, 2)}
    for label, query in QUERIES.items():
        cli = min(_run([*CLI, "sql", str(path), query, "--format", "json"], env)[0]
                  for _ in range(repeat))
        splits = [json.loads(_run([sys.executable, "-c", SPLIT, str(path), query], env)[1])
                  for _ in range(repeat)]
        best = {k: min(s[k] for s in splits) for k in ("import", "load", "first", "again")}
        out[label] = {"cli_s": round(cli, 3), **{f"{k}_s": round(v, 3) for k, v in
                                                 best.items()},
                      "answer": splits[0]["answer"]}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="stepscope sql benchmark")
    ap.add_argument("--size", default="1G", help="trace size (gen_large_trace.py)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement (best kept)")
    ap.add_argument("--nsys-kernels", type=int, default=0, metavar="N",
                    help="also an nsys export with N kernels (bench_nsys.py's generator)")
    ap.add_argument("--fresh-cache", action="store_true",
                    help="empty the inputs' cache first, so the first load parses and writes it")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    args = ap.parse_args(argv)
    nbytes = parse_size(args.size)
    inputs = [(args.size, HERE / "data" / f"trace_{nbytes // 10**6}M.json")]
    if not inputs[0][1].exists():
        print(f"generating {inputs[0][1]} ...", file=sys.stderr)
        generate(read_source(None), nbytes, inputs[0][1])
    if args.nsys_kernels:
        from bench_nsys import generate as generate_nsys

        synth = HERE / "data" / f"nsys_{args.nsys_kernels}.sqlite"
        if not synth.exists():
            print(f"generating {synth} ...", file=sys.stderr)
            generate_nsys(synth, args.nsys_kernels)
        inputs.append((f"nsys {args.nsys_kernels:,} kernels", synth))
    results = {}
    for name, path in inputs:
        r = results[name] = bench(path, args.repeat, args.fresh_cache)
        what = "first load + cache write" if args.fresh_cache else "load (cache kept)"
        print(f"{name} ({r['size_mb']} MB): {what} {r['first_load_s']} s")
        for label in QUERIES:
            q = r[label]
            assert isinstance(q, dict)
            print(f"  {label:<13} cli {q['cli_s']:.3f} s | in process: imports "
                  f"{q['import_s']:.3f} s, cached load {q['load_s']:.3f} s, first query "
                  f"{q['first_s']:.3f} s, again {q['again_s']:.3f} s | {q['answer'][:90]}",
                  flush=True)
    if args.json:
        print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
