"""The dashboard's timeline on a very large trace (issue 24, item 3), against its goals.

    python benchmarks/bench_timeline_scale.py --size 4.3G     # ~4 GiB, generated if missing
    python benchmarks/bench_timeline_scale.py --trace benchmarks/data/trace_1000M.json

Every figure has its baseline measured in the same run, on the same file:

* ``report``: ``stepscope report --no-cache --format json FILE`` in a fresh process (wall,
  CPU, peak RSS with ``/usr/bin/time -v``), and the bare single-core msgspec parse of the
  same file (``bench_report.BARE``): goal report <= 2x bare (on 1 GiB);
* ``ready``: a fresh server process (the real Starlette app serving the file, an empty
  cache, as ``stepscope view FILE`` starts) asked for the trace until
  ``/api/timeline/meta`` answers 200: goal <= 1.5x ``report``;
* ``server peak RSS``: ``ru_maxrss`` of that server process (its loading child, which
  parses and analyses then exits, is reported beside it): goal <= 2 GiB;
* ``first render``: the server's answer to the first full-window ``/api/timeline`` query
  at 2,000 px after ready (request to body, JSON encoding included): goal <= 1 s;
* ``window query``: the slowest of the full window and N random windows (log-uniform
  widths from 10 us to the whole trace) at 2,000 px: goal <= 0.5 s.

The machine is shared (2 cores): wall times swing with other load, so the load average is
printed beside them and the CPU seconds of ``report`` too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_report import BARE, CLI, child, timed_rss  # noqa: E402
from gen_large_trace import generate, parse_size, read_source  # noqa: E402

# the bare parse with its CPU time too: on a loaded machine wall time measures the load
BARE_CPU = BARE.replace(
    "t = time.perf_counter()", "t, c = time.perf_counter(), time.process_time()"
).replace(
    "print(time.perf_counter() - t, len(doc.traceEvents))",
    "print(time.perf_counter() - t, len(doc.traceEvents), time.process_time() - c)",
)

GIB = 1 << 30

SERVER = r"""
import json, resource, sys, time
import numpy as np
from starlette.testclient import TestClient
from stepscope.server.app import ViewConfig, create_app

root, width, n_random = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t0 = time.perf_counter()
with TestClient(create_app(ViewConfig(root=root)), base_url="http://127.0.0.1") as c:
    trace = c.get("/api/runs").json()["runs"][0]["workers"][0]["spans"][0]["trace"]
    # poll as the page does (its progress bar), not so often that polling competes for CPU
    while c.get("/api/progress", params={"trace": trace}).json()["state"] not in (
            "ready", "error"):
        time.sleep(0.25)
    r = c.get("/api/timeline/meta", params={"trace": trace})
    ready = time.perf_counter() - t0
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    ready_cpu = me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime
    assert r.status_code == 200, r.text[:300]
    meta = r.json()
    span = meta["end"]
    def ask(start, end):
        t = time.perf_counter()
        resp = c.get("/api/timeline", params={"trace": trace, "start": start, "end": end,
                                              "width": width})
        took = time.perf_counter() - t
        assert resp.status_code == 200, resp.text[:300]
        return took, len(resp.content)
    first, first_bytes = ask(0, span)
    rng = np.random.default_rng(24)
    times = [first]
    for _ in range(n_random):
        w = int(min(span, 10 ** rng.uniform(4, np.log10(max(span, 10**4 + 1)))))
        a = int(rng.integers(0, max(1, span - w)))
        times.append(ask(a, a + w)[0])
    print(json.dumps({
        "ready_s": ready, "ready_cpu_s": ready_cpu,
        "first_render_s": first, "first_render_kb": first_bytes / 1e3,
        "query_max_s": max(times), "query_median_s": float(np.median(times)),
        "events": meta["events"], "rows": len(meta["rows"]),
        "server_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "child_rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024,
    }))
"""


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def bench(path: Path, width: int, n_random: int) -> dict[str, float]:
    env = dict(os.environ)
    cache = tempfile.mkdtemp(prefix="stepscope-scale-cache-")
    env["XDG_CACHE_HOME"] = cache
    res: dict[str, float] = {"size_gib": path.stat().st_size / GIB}
    try:
        with open(path, "rb") as fh:  # a warm page cache for every measurement
            while fh.read(64 << 20):
                pass
        print(f"load average {_load()}: report --no-cache ...", file=sys.stderr, flush=True)
        wall, rss, rc, err, cpu = timed_rss(
            [*CLI, "report", "--no-cache", "--format", "json", str(path)], env)
        if rc != 0:
            raise SystemExit(f"report exited {rc}: {err.strip()[-500:]}")
        res.update(report_s=wall, report_cpu_s=cpu, report_rss_gib=rss / GIB)
        print(f"load average {_load()}: bare parse ...", file=sys.stderr, flush=True)
        _, _, _, out, _ = child([sys.executable, "-c", BARE_CPU, str(path)], env)
        res["bare_parse_s"], res["bare_parse_cpu_s"] = float(out.split()[0]), float(out.split()[2])
        print(f"load average {_load()}: server ...", file=sys.stderr, flush=True)
        _, _, rc, out, err = child([sys.executable, "-c", SERVER, str(path), str(width),
                                    str(n_random)], env)
        if rc != 0:
            raise SystemExit(f"server run exited {rc}: {err.strip()[-800:]}")
        s = json.loads(out.strip().splitlines()[-1])
        res.update(ready_s=s["ready_s"], ready_cpu_s=s["ready_cpu_s"],
                   first_render_s=s["first_render_s"],
                   first_render_kb=s["first_render_kb"], query_max_s=s["query_max_s"],
                   query_median_s=s["query_median_s"], events=s["events"], rows=s["rows"],
                   server_rss_gib=s["server_rss"] / GIB, child_rss_gib=s["child_rss"] / GIB)
        res["load_average_end"] = os.getloadavg()[0]
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return res


def table(r: dict[str, float], width: int) -> str:
    ratio_ready = r["ready_s"] / r["report_s"]
    ratio_parse = r["report_s"] / r["bare_parse_s"]
    rows = [
        ("report --no-cache (wall / CPU / peak RSS)",
         f"{r['report_s']:.1f} s / {r['report_cpu_s']:.1f} s / {r['report_rss_gib']:.2f} GiB",
         "baseline"),
        ("bare msgspec parse, 1 core (wall / CPU)",
         f"{r['bare_parse_s']:.2f} s / {r['bare_parse_cpu_s']:.2f} s", "baseline"),
        ("report / bare parse (wall; CPU)",
         f"{ratio_parse:.2f}x; {r['report_cpu_s'] / r['bare_parse_cpu_s']:.2f}x",
         "<= 2x (on 1 GiB)"),
        ("timeline ready, fresh server, empty cache (wall; CPU with its child)",
         f"{r['ready_s']:.1f} s = {ratio_ready:.2f}x report; {r['ready_cpu_s']:.1f} s = "
         f"{r['ready_cpu_s'] / r['report_cpu_s']:.2f}x", "<= 1.5x report"),
        ("server peak RSS", f"{r['server_rss_gib']:.2f} GiB", "<= 2 GiB"),
        ("  its loading child (exits when done)", f"{r['child_rss_gib']:.2f} GiB", ""),
        (f"first render (full window, {width} px)",
         f"{r['first_render_s'] * 1000:.0f} ms ({r['first_render_kb']:.0f} kB)", "<= 1 s"),
        (f"slowest window query ({width} px)",
         f"{r['query_max_s'] * 1000:.0f} ms (median {r['query_median_s'] * 1000:.0f} ms)",
         "<= 0.5 s"),
    ]
    lines = [f"{r['size_gib']:.2f} GiB, {int(r['events']):,} timeline events, "
             f"{int(r['rows'])} rows; load average at the end {r['load_average_end']:.1f}",
             "", "| measure | figure | goal |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="timeline at scale (issue 24, item 3)")
    ap.add_argument("--size", default="1G", help="generated trace size (e.g. 1G, 4.3G)")
    ap.add_argument("--trace", type=Path, help="an existing trace instead of a generated one")
    ap.add_argument("--width", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=30, help="random windows after the first")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    path = args.trace
    if path is None:
        nbytes = parse_size(args.size)
        path = HERE / "data" / f"trace_{nbytes // 10**6}M.json"
        if not path.exists():
            print(f"generating {path} ...", file=sys.stderr, flush=True)
            generate(read_source(None), nbytes, path)
    r = bench(path, args.width, args.queries)
    print(table(r, args.width))
    if args.json:
        print(json.dumps(r, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
