"""Dashboard and HTML-report speed on a large (>= 1 M events) trace, in Debian's chromium.

    python benchmarks/bench_dashboard.py [--trace PATH] [--size 480M]

Prints: server load time (read + analyse + timeline index), the level-of-detail query
time, the time to first timeline render in the browser once the trace is loaded
(navigation start -> performance mark ``stepscope:timeline-first-render``), the frame
(draw) times while zooming with the wheel, and the HTML report's size and open time
from file:// (to its first timeline render). Goals: first render <= 1 s, frames <= 33 ms.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.browser.conftest: the in-thread server


def _frames(page: Any, n: int, x: float, y: float, dy: float) -> list[float]:
    page.evaluate("window.__stepscopeFrames = []")
    page.keyboard.down("Control")  # Ctrl+wheel zooms (the wheel alone scrolls the tracks)
    for _ in range(n):
        page.mouse.move(x, y)
        page.mouse.wheel(0, dy)
        page.wait_for_timeout(60)
    page.keyboard.up("Control")
    page.wait_for_timeout(300)
    return list(page.evaluate("window.__stepscopeFrames"))


def _first_render(page: Any, url: str) -> float:
    page.goto("about:blank")  # a real navigation each time (a hash change alone is not one)
    page.goto(url)
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=120_000)
    return float(page.evaluate(
        "performance.getEntriesByName('stepscope:timeline-first-render')[0].startTime"))


def _stats(xs: list[float]) -> str:
    xs = sorted(xs)
    p95 = xs[min(len(xs) - 1, int(0.95 * len(xs)))]
    return (f"n={len(xs)} median {statistics.median(xs):.1f} ms, p95 {p95:.1f} ms, "
            f"max {xs[-1]:.1f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", type=Path, default=None)
    ap.add_argument("--size", default="480M", help="size for gen_large_trace.py (default 480M)")
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    trace = args.trace
    if trace is None:
        trace = HERE / "data" / f"dashboard_{args.size}.pt.trace.json"
        if not trace.exists():
            subprocess.run([sys.executable, str(HERE / "gen_large_trace.py"), "--size", args.size,
                            "--out", str(trace)], check=True)
    from playwright.sync_api import sync_playwright
    from tests.browser.conftest import Server

    from stepscope.formats import load_trace
    from stepscope.report.build import build_report
    from stepscope.report.html import write_html
    from stepscope.report.timeline import TimelineIndex

    t = time.perf_counter()
    tr = load_trace(str(trace))
    t_read = time.perf_counter() - t
    t = time.perf_counter()
    index = TimelineIndex(tr)
    t_index = time.perf_counter() - t
    print(f"trace: {trace.name}, {trace.stat().st_size / 1e6:.0f} MB, {tr.meta.events} events "
          f"read, {index.n} timeline events; read {t_read:.2f} s, timeline index {t_index:.2f} s")
    t = time.perf_counter()
    for _ in range(5):
        index.query(0, index.finish - index.origin, 1200)
    print(f"LOD query, whole trace at 1200 px: {(time.perf_counter() - t) / 5 * 1000:.0f} ms")
    mid = (index.finish - index.origin) // 2
    t = time.perf_counter()
    for _ in range(5):
        index.query(mid, mid + 5_000_000, 1200)
    print(f"LOD query, 5 ms window at 1200 px: {(time.perf_counter() - t) / 5 * 1000:.1f} ms")

    server = Server(str(trace))
    tid = trace.name
    deadline = time.monotonic() + 600
    t = time.perf_counter()
    import urllib.request

    while time.monotonic() < deadline:
        with urllib.request.urlopen(f"{server.url}api/report?trace={tid}") as r:
            if r.status == 200:
                break
        time.sleep(0.2)
    print(f"server: trace loaded in the background in {time.perf_counter() - t:.2f} s "
          "(Arrow cache warm after the read above)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
        page = b.new_page(viewport={"width": 1400, "height": 900})
        firsts = [_first_render(page, f"{server.url}#/timeline?trace={tid}") for _ in range(4)]
        print(f"dashboard: first timeline render {firsts[0]:.0f} ms after navigation with a "
              f"cold browser cache, then {statistics.median(firsts[1:]):.0f} ms (median of 3: "
              f"{', '.join(f'{x:.0f}' for x in firsts[1:])})")
        box = page.locator("#timeline-canvas").bounding_box()
        x, y = box["x"] + 200 + (box["width"] - 200) / 2, box["y"] + 150
        zin = _frames(page, 25, x, y, -300)
        zout = _frames(page, 25, x, y, 300)
        print(f"dashboard: frame (draw) time while zooming: {_stats(zin + zout)}")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "report.html"
            t = time.perf_counter()
            write_html(build_report(tr, top=20), str(out))
            t_write = time.perf_counter() - t
            firsts = [_first_render(page, out.as_uri() + "#/timeline") for _ in range(3)]
            print(f"HTML report: {out.stat().st_size / 1e6:.1f} MB written in {t_write:.1f} s; "
                  f"opens to first timeline render in {statistics.median(firsts):.0f} ms "
                  f"(median of 3 from file://)")
            zin = _frames(page, 25, x, y, -300)
            print(f"HTML report: frame (draw) time while zooming: {_stats(zin)}")
        b.close()
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
