"""The timeline on modern traces whose Python frames nest 28-80 deep (issue 24).

On the H100 (with_stack) and vLLM graph-capture traces of ../shared/traces/outside, an
operator under more enclosing ranges than the old 24-level cap is drawn, found by search,
selected and shown; "go to launch" lands on a drawn event; at 1024x700 the GPU rows are on
screen without scrolling (pinned).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from stepscope.formats import load_trace
from stepscope.report.lookup import enclosing, launching_op, search_hits
from stepscope.report.timeline import T_DEVICE, TimelineIndex
from tests.browser.conftest import shot
from tests.conftest import shared_trace

CASES = [
    ("h100", "outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
     "aten::mm", 28),
    ("vllm", "outside/tracelens-vllm-mi300-graph-capture/"
             "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz", "aten::addmm", 59),
]


def _until(page: Any, js: str, arg: Any = None, timeout_s: float = 20.0) -> None:
    """Poll a JS function from Python until it returns true: the pages' CSP forbids the eval
    that wait_for_function's in-page polling relies on."""
    import time

    deadline = time.monotonic() + timeout_s
    while not page.evaluate(js, arg):
        assert time.monotonic() < deadline, f"timed out waiting for {js}"
        page.wait_for_timeout(50)


def _drawn(page: Any, event_id: int) -> list[int]:
    """Wait until ``event_id`` is selected and drawn in the window's own data; its box."""
    _until(page, """(id) => { const c = document.querySelector('#timeline-canvas').dataset;
             return c.selected == String(id) && !!c.selbox
               && Math.abs(c.chunkStart - c.start) <= 1; }""", event_id)
    page.wait_for_timeout(150)
    box = page.locator("#timeline-canvas").get_attribute("data-selbox")
    return json.loads(box)  # type: ignore[no-any-return]


def _on_canvas(page: Any, box: list[int]) -> None:
    cv = page.locator("#timeline-canvas").bounding_box()
    x, y, w, h = box
    assert x >= 220 - 3 and x + min(w, 5) <= cv["width"] and y >= 30 and y + h <= cv["height"], box


@pytest.mark.parametrize(("name", "rel", "op", "min_stack"), CASES, ids=[c[0] for c in CASES])
def test_deep_operator_search_select_and_launch(page: Any, serve: Any, tmp_path: Path,
                                                name: str, rel: str, op: str,
                                                min_stack: int) -> None:
    src = shared_trace(rel)
    shutil.copy(src, tmp_path / src.name)
    tl = TimelineIndex(load_trace(str(src), use_cache=False))
    found = search_hits(tl, op)
    hits = found["hits"]["id"]
    assert hits
    # the hit under the most enclosing ranges (Python frames + operators)
    depths = [len(enclosing(tl, i)) for i in hits]
    k = int(np.argmax(depths))
    target = hits[k]
    assert depths[k] >= min_stack > 24  # deeper than the old 24-level cap
    exact = [j for j, i in enumerate(hits) if tl.trace.name(int(tl.name[i])) == op]
    assert k in exact

    page.set_viewport_size({"width": 1024, "height": 700})
    server = serve(str(tmp_path))
    page.goto(server.url + "#/timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    cv = page.locator("#timeline-canvas")
    height = cv.bounding_box()["height"]
    lanes = json.loads(cv.get_attribute("data-lanes"))
    streams = [ln for ln in lanes if ln[0] == "stream"]
    assert streams and all(ln[4] == 1 and ln[2] >= 30 and ln[2] + ln[3] <= height
                           for ln in streams), (streams, height)
    assert cv.get_attribute("data-scroll-y") == "0"
    # operators sit at the top of their thread's row; the Python frames are folded above
    py = [ln for ln in lanes if ln[0] == "python"]
    assert py and all(ln[3] == 14 + 4 for ln in py)
    shot(page, f"{name}-timeline-1024x700")

    page.fill("#timeline-search", op)
    page.wait_for_selector("#search-results li")
    assert int(page.locator("#search-hits").inner_text().split()[0]) == found["count"]
    assert page.locator("#search-results li").count() == len(hits)
    # next / previous walk the hits in time order
    page.click("#search-next")
    _drawn(page, hits[0])
    if len(hits) > 1:
        page.click("#search-next")
        _drawn(page, hits[1])
        page.click("#search-prev")
        _drawn(page, hits[0])
    page.locator(f"#hit-{k} button").click()
    box = _drawn(page, target)
    _on_canvas(page, box)
    assert page.locator("#event-name").inner_text() == op
    stack = page.locator("#event-stack li")
    assert stack.count() == depths[k]
    shot(page, f"{name}-timeline-deep-{op.replace(':', '')}")

    # go to launch: a kernel with a launch, its launch drawn; its launching operator named
    dev = [i for i in np.flatnonzero((tl.table == T_DEVICE) & (tl.partner >= 0)).tolist()]
    assert dev
    kernel = dev[len(dev) // 2]
    kname = tl.trace.name(int(tl.name[kernel]))
    page.fill("#timeline-search", kname)
    _until(page, "(n) => !!document.querySelector('#search-hits')?.textContent"
                 ".startsWith(String(n))", search_hits(tl, kname)["count"])
    kh = search_hits(tl, kname)["hits"]["id"]
    page.locator(f"#hit-{kh.index(kernel)} button").click()
    _on_canvas(page, _drawn(page, kernel))
    by = launching_op(tl, kernel)
    assert by is not None
    assert by["name"] in page.locator("#launched-by").inner_text()
    page.click("#follow-flow")
    launch = int(tl.partner[kernel])
    _on_canvas(page, _drawn(page, launch))
    assert page.locator("#event-name").inner_text() == tl.trace.name(int(tl.name[launch]))
    assert int(cv.get_attribute("data-flows-drawn")) >= 1
    shot(page, f"{name}-timeline-launch")
    assert not page.errors, page.errors


def test_wheel_scrolls_python_rows_open_and_tracks_pin(page: Any, serve: Any,
                                                        tmp_path: Path) -> None:
    src = shared_trace(CASES[1][1])
    shutil.copy(src, tmp_path / src.name)
    page.set_viewport_size({"width": 1024, "height": 700})
    server = serve(str(tmp_path))
    page.goto(server.url + "#/timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    cv = page.locator("#timeline-canvas")
    box = cv.bounding_box()

    def lanes() -> list[Any]:
        return json.loads(cv.get_attribute("data-lanes"))  # type: ignore[no-any-return]

    # open the main thread's Python frames: 78 levels, taller than the canvas
    py = next(ln for ln in lanes() if ln[0] == "python")
    page.mouse.click(box["x"] + 40, box["y"] + py[2] + 6)
    _until(page, "() => document.querySelector('#timeline-canvas').dataset.scrollMax > 0")
    opened = next(ln for ln in lanes() if ln[1] == py[1])
    assert opened[3] == 78 * 14 + 4
    assert page.locator("#timeline-scrollbar").evaluate("e => e.scrollHeight > e.clientHeight")
    # the wheel scrolls the tracks, the window stays; Ctrl+wheel zooms
    start, end = cv.get_attribute("data-start"), cv.get_attribute("data-end")
    page.mouse.move(box["x"] + 600, box["y"] + box["height"] - 60)
    page.mouse.wheel(0, 300)
    _until(page, "() => document.querySelector('#timeline-canvas').dataset.scrollY > 0")
    assert (cv.get_attribute("data-start"), cv.get_attribute("data-end")) == (start, end)
    assert page.locator("#timeline-scrollbar").evaluate("e => e.scrollTop") > 0
    streams = [ln for ln in lanes() if ln[0] == "stream"]
    assert all(ln[4] == 1 and 30 <= ln[2] <= box["height"] for ln in streams)  # still pinned
    shot(page, "vllm-timeline-python-open-scrolled")
    page.keyboard.down("Control")
    page.mouse.wheel(0, -300)
    page.keyboard.up("Control")
    page.wait_for_timeout(100)
    assert int(cv.get_attribute("data-end")) - int(cv.get_attribute("data-start")) < \
        int(end) - int(start)
    # unpin a stream (the ● at the gutter's right edge), then pin it back
    s0 = next(ln for ln in lanes() if ln[0] == "stream")
    page.mouse.click(box["x"] + 211, box["y"] + s0[2] + 8)
    assert next(ln for ln in lanes() if ln[0] == "stream" and ln[1] == s0[1])[4] == 0
    # now in the scrolled band, under the opened Python rows: scroll to the end to reach it
    page.mouse.wheel(0, 20_000)
    _until(page, "() => (d => d.scrollY == d.scrollMax)"
                 "(document.querySelector('#timeline-canvas').dataset)")
    s1 = next(ln for ln in lanes() if ln[0] == "stream" and ln[1] == s0[1])
    assert int(cv.get_attribute("data-pin-bottom")) <= s1[2] < box["height"]
    page.mouse.click(box["x"] + 211, box["y"] + s1[2] + 8)
    assert next(ln for ln in lanes() if ln[0] == "stream" and ln[1] == s0[1])[4] == 1
    assert not page.errors, page.errors


def test_nsys_gpu_row_is_on_screen_at_1024x700(page: Any, serve: Any, tmp_path: Path) -> None:
    """The issue's nsys export: ten thread rows of 6-19 levels used to push the GPU row to
    1,916 px; pinned, it sits under the counters."""
    src = shared_trace("nsys/nvidia-fuser/a049892_report1.sqlite")
    shutil.copy(src, tmp_path / src.name)
    page.set_viewport_size({"width": 1024, "height": 700})
    server = serve(str(tmp_path))
    page.goto(server.url + "#/timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    cv = page.locator("#timeline-canvas")
    height = cv.bounding_box()["height"]
    lanes = json.loads(cv.get_attribute("data-lanes"))
    streams = [ln for ln in lanes if ln[0] == "stream"]
    assert streams and all(ln[4] == 1 and ln[2] + ln[3] <= height for ln in streams)
    assert int(cv.get_attribute("data-scroll-max")) > 0  # the threads scroll under them
    shot(page, "nsys-timeline-1024x700")
    assert not page.errors, page.errors


def test_html_report_draws_memory_tracks_and_finds_the_deep_mm(page: Any,
                                                               tmp_path: Path) -> None:
    from stepscope.report.build import build_report
    from stepscope.report.html import write_html

    src = shared_trace(CASES[0][1])
    out = tmp_path / "report.html"
    write_html(build_report(load_trace(str(src)), top=20), str(out))
    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto(out.as_uri() + "#/timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    cv = page.locator("#timeline-canvas")
    lanes = json.loads(cv.get_attribute("data-lanes"))
    counters = [ln[1] for ln in lanes if ln[0] == "counter"]
    assert counters == ["util:0", "mem:0:-1:allocated", "mem:1:0:allocated",
                        "mem:1:0:reserved"]
    page.fill("#timeline-search", "aten::mm")
    page.wait_for_selector("#search-results li")
    assert page.locator("#search-results li").count() == 96
    page.click("#search-next")
    _until(page, "() => (d => d.selected != '-1' && !!d.selbox)"
                 "(document.querySelector('#timeline-canvas').dataset)")
    page.wait_for_selector("#event-name")
    assert page.locator("#event-name").inner_text() == "aten::mm"
    shot(page, "html-h100-timeline-mm")
    assert not page.errors, page.errors
