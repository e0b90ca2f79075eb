"""The Critical path page and the path on the timeline, in Debian's chromium, on real traces:
the numbers shown equal the JSON report's; the timeline opened from the page outlines the
path's events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from tests.browser.conftest import shot
from tests.browser.helpers import column, saving_text, shown_us, time_unit
from tests.conftest import shared_trace

ALEXNET = "hta/critical_path/alexnet"
ALEXNET_FILE = "benchmark_result_2869224_1695835535_trace.json.gz"
# HTA's own example window (tests/integration/test_critical_path_hta.py pins its figures)
HTA_WINDOW = "[param|pytorch.model.alex_net|0|0|0|measure|forward]#1"
RESNET_FILE = "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text()).strip()


def check_critical_path(page: Any, report: dict[str, Any], name: str) -> None:
    page.click("#nav-critical-path")
    page.wait_for_selector("#page-critical-path", timeout=60_000)
    cp = report["critical_path"]
    card = [cp["length_us"], cp["window_us"]]
    assert text(page, "#cp-length") == shown_us(cp["length_us"], card)
    assert text(page, "#cp-window") == shown_us(cp["window_us"], card)
    assert text(page, "#cp-cpu") == f"{cp['bound_by_pct']['cpu']:.2f}"
    by = cp["by_category_us"]
    for cat, pct in cp["bound_by_pct"].items():
        row = f"#cp-bound-by tr[data-cat='{cat}']"
        assert text(page, f"{row} td[data-key='pct']") == f"{pct:.2f}"
        assert text(page, f"{row} td[data-key='us']") == shown_us(by[cat], by.values())
    # the bar: one segment per category with path time, widths in proportion
    segs = page.locator("#cp-bar > div")
    assert segs.count() == sum(p > 0 for p in cp["bound_by_pct"].values())
    # the lane chart: a lane per thread / stream, a segment per path event
    events = cp["path"]["events"]
    lanes = {f"stream {e['stream']}" if e["stream"] is not None else f"thread {e['thread']}"
             for e in events}
    assert page.locator("#cp-lanes .cp-lane[data-lane]").count() == len(lanes)
    assert page.locator("#cp-lanes rect.cp-event").count() == len(events)
    # every event of the path is drawn: the named ones, and bands of all when more exist
    bands = cp["path"]["bands"]
    assert bands["events"] >= len(events)
    drawn_bands = len(bands["lane"]) if bands["events"] > len(events) else 0
    assert page.locator("#cp-lanes rect.cp-band").count() == drawn_bands
    assert text(page, "#cp-total") == f"{bands['events']:,}"
    # one window basis: cards are the per-window figures' means, the text names the window
    per = cp["per_window"]
    assert cp["window_us"] == pytest.approx(sum(w["window_us"] for w in per) / len(per),
                                            abs=1e-3)
    ex = next(w for w in per if w["window"] == cp["path"]["window"])
    path_window = cp["path"]["end_us"] - cp["path"]["start_us"]
    assert path_window == pytest.approx(ex["window_us"], abs=0.5)  # µs doubles near 1.7e15
    assert f"{shown_us(path_window)} {time_unit([path_window])[0]} window of" in \
        text(page, "#cp-path-text")
    assert page.locator("#cp-lanes").get_attribute("data-segments") == str(len(events))
    # top events: one unit for the column
    top = sorted(cp["top_events"], key=lambda r: -r["on_path_us"])
    rows = page.locator("#cp-top tbody tr")
    assert rows.count() == len(top)
    assert rows.first.locator("td[data-key='on_path_us']").inner_text() == \
        shown_us(top[0]["on_path_us"], column(top, "on_path_us"))
    assert text(page, "#cp-top th[data-key='on_path_us']") == \
        f"on path per window {time_unit(column(top, 'on_path_us'))[0]} ▼"
    assert page.locator("#cp-windows tbody tr").count() == len(cp["per_window"])
    w = report["whatif"]
    if w:
        both = [w["before"]["step_us"], w["after"]["step_us"]]
        assert text(page, "#cp-pred-before") == shown_us(both[0], both)
        assert text(page, "#cp-pred-after") == shown_us(both[1], both)
    for width in (1024, 1440):
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(200)
        shot(page, f"{name}-critical-path-{width}")
    page.set_viewport_size({"width": 1400, "height": 900})


def open_path_on_timeline(page: Any, report: dict[str, Any], name: str) -> dict[str, int]:
    """Follow "show on timeline": the view is the path's window, its events outlined."""
    path = report["critical_path"]["path"]
    page.click("#cp-timeline-link")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    page.wait_for_function(
        "Number(document.querySelector('#timeline-canvas').dataset.cpStrips) > 0")
    cv = page.locator("#timeline-canvas")
    note = page.locator("#timeline-cp")
    assert note.get_attribute("data-events") == str(len(path["events"]))
    # every path event sits on a row of the timeline (its thread's or its stream's)
    assert note.get_attribute("data-placed") == str(len(path["events"]))
    start, end = int(cv.get_attribute("data-start")), int(cv.get_attribute("data-end"))
    span_ns = (path["end_us"] - path["start_us"]) * 1000
    assert abs((end - start) - span_ns * 1.04) <= max(2000, span_ns * 0.001)  # 2 % margins
    got = {k: int(cv.get_attribute(f"data-cp-{k}")) for k in ("drawn", "strips")}
    # the window holds the whole path: a strip per named event, and per band when the path
    # has more events than the report names (every band on its thread's or stream's row)
    bands = path["bands"]
    more = bands is not None and bands["events"] > len(path["events"])
    assert note.get_attribute("data-total") == str(bands["events"] if more else len(path["events"]))
    assert note.get_attribute("data-bands") == str(len(bands["lane"]) if more else 0)
    assert got["strips"] == len(path["events"]) + (len(bands["lane"]) if more else 0)
    # outlined: exactly the path's events drawn one by one, those at least a pixel wide (the
    # narrower are folded into per-pixel boxes); the chunk is plot-wide (canvas - 232 px)
    a, b = int(cv.get_attribute("data-chunk-start")), int(cv.get_attribute("data-chunk-end"))
    ns_px = (b - a) / (cv.bounding_box()["width"] - 232)
    wide = sum(e["dur_us"] * 1000 >= ns_px * 1.01 for e in path["events"])
    edge = sum(abs(e["dur_us"] * 1000 - ns_px) <= ns_px * 0.01 for e in path["events"])
    assert wide <= got["drawn"] <= wide + edge and got["drawn"] > 0
    shot(page, f"{name}-timeline-path")
    page.click("#cp-toggle")  # hide: nothing outlined
    page.wait_for_function("document.querySelector('#timeline-canvas').dataset.cpDrawn === '0'")
    assert cv.get_attribute("data-cp-strips") == "0"
    page.click("#cp-toggle")
    return got


def test_critical_path_page_in_the_dashboard(page: Any, serve: Any) -> None:
    """HTA's alexnet trace, the whole trace as the window (no steps): the page's figures are
    the JSON's; the path on the timeline is outlined."""
    root = shared_trace(ALEXNET)
    report = build_report(load_trace(str(root / ALEXNET_FILE)), top=1000).to_json()
    server = serve(str(root))
    page.goto(server.url + f"#/overview?trace={ALEXNET_FILE}")
    page.wait_for_selector("#page-overview", timeout=60_000)
    check_critical_path(page, report, "alexnet")
    open_path_on_timeline(page, report, "alexnet")
    assert not page.errors, page.errors


def test_critical_path_page_in_the_html_report(page: Any, tmp_path: Path) -> None:
    """HTA's example window in the single-file report: the host share shown is HTA's
    cpu_bound (89.42 %) and the length HTA's 35,834 µs."""
    from stepscope.report.html import write_html

    rep = build_report(load_trace(str(shared_trace(ALEXNET) / ALEXNET_FILE)), top=1000,
                       window=HTA_WINDOW)
    out = tmp_path / "alexnet.html"
    write_html(rep, str(out))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-overview", timeout=60_000)
    report = rep.to_json()
    assert report["critical_path"]["length_us"] == 35834
    check_critical_path(page, report, "html-alexnet-hta")
    assert text(page, "#cp-length") == "35.834"
    assert text(page, "#cp-host") == "89.42"
    got = open_path_on_timeline(page, report, "html-alexnet-hta")
    assert got["drawn"] == 36  # of 75 path events, those >= 1 px in the 36 ms window
    assert not page.errors, page.errors


def test_replayed_savings_and_steps_windows_in_the_html_report(page: Any,
                                                                tmp_path: Path) -> None:
    """ResNet-50 (6 ProfilerSteps): a window per step; replayed findings say the predicted
    step, bounds say "up to"; the prediction with every fix applied together."""
    from stepscope.report.html import write_html

    rep = build_report(load_trace(str(shared_trace(RESNET_FILE))), top=1000)
    out = tmp_path / "resnet.html"
    write_html(rep, str(out))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-overview", timeout=60_000)
    report = rep.to_json()
    methods = {f["estimated_saving"]["method"] for f in report["findings"]}
    assert methods == {"replay", "bound"}
    check_critical_path(page, report, "html-resnet")
    assert page.locator("#cp-windows tbody tr").count() == 6
    # 500 events named of a longer path: the lanes draw all 3,479 (as bands), the 500 over them
    path = report["critical_path"]["path"]
    assert len(path["events"]) == 500 and path["bands"]["events"] == 3479
    assert text(page, "#cp-named") == "500" and text(page, "#cp-total") == "3,479"
    # the step's window: ProfilerStep#9's 182.172 ms (its device work included), not its
    # events' span; the window card is the six steps' mean
    assert path["end_us"] - path["start_us"] == pytest.approx(182_172, abs=1)
    assert report["critical_path"]["window_us"] == pytest.approx(177_592.167, abs=1e-3)
    # a window's link: the timeline zoomed to that step, nothing outlined (its path is not kept)
    first = report["critical_path"]["per_window"][0]
    assert first["window"] != report["critical_path"]["path"]["window"]
    page.locator("#cp-windows tbody tr").first.locator("a.tl-link").click()
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    cv = page.locator("#timeline-canvas")
    span = int(cv.get_attribute("data-end")) - int(cv.get_attribute("data-start"))
    assert abs(span - first["window_us"] * 1000 * 1.04) <= first["window_us"]  # 0.1 %
    assert page.locator("#timeline-cp").count() == 0 and cv.get_attribute("data-cp-drawn") == "0"
    page.click("#nav-critical-path")
    open_path_on_timeline(page, report, "html-resnet")  # host-only path: one thread's row
    page.click("#nav-findings")
    page.wait_for_selector("#page-findings")
    w = report["whatif"]
    assert f"(−{w['saving_pct']:.2f} %)" in text(page, "#findings-together")
    cards = page.locator("#page-findings .finding")
    for i, f in enumerate(report["findings"]):
        assert cards.nth(i).locator(".saving").inner_text().strip() == \
            saving_text(f["estimated_saving"])
    shot(page, "html-resnet-findings-replay")
    assert not page.errors, page.errors
