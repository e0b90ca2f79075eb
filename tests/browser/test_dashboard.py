"""The dashboard and the HTML report in Debian's chromium, on real traces."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from tests.browser.conftest import shot
from tests.browser.helpers import (
    check_overview,
    check_tables,
    column,
    drive_timeline,
    shown_us,
    time_unit,
)
from tests.conftest import shared_trace
from tests.dashboard_builders import EVIL_KERNEL, EVIL_OP, dashboard_trace

RESNET = "kineto_resnet50"
FIRST = "num_workers_0/worker0.1623143089861.pt.trace.json.gz"


def _report(path: Path, top: int = 1000) -> dict[str, Any]:
    return build_report(load_trace(str(path)), top=top).to_json()


def test_dashboard_on_a_real_logdir(page: Any, serve: Any) -> None:
    root = shared_trace(RESNET)
    server = serve(str(root), source_link="pycharm://open?file={path}&line={line}",
                   path_map=(("resnet50_", "/home/me/src/resnet50_"),))
    page.goto(server.url)
    # run -> worker -> span from the torch-tb-profiler layout: 2 runs x 2 spans
    page.wait_for_selector("#trace-select option", state="attached")
    options = page.locator("#trace-select option").all_inner_texts()
    assert len(options) == 4 and options[0] == "num_workers_0 / worker0 / 1623143089861"
    report = _report(root / FIRST)
    check_overview(page, report, "resnet-nw0")
    check_tables(page, report, "resnet-nw0")
    # jump to source: finding source lines link through the template, remapped
    link = page.locator("#page-findings .source a").first
    assert link.get_attribute("href") == \
        "pycharm://open?file=/home/me/src/resnet50_profiler_api.py&line=42"
    got = drive_timeline(page, "resnet-nw0")
    assert got["launch"] in ("cudaLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync")
    api = page.request.get(server.url + f"api/search?trace={FIRST}&q=Memcpy").json()
    assert got["hits"] == api["count"] > 0
    # export the current window as a Chrome trace
    with page.expect_download() as dl:
        page.click("#export")
    exported = json.loads(Path(dl.value.path()).read_text())
    xs = [ev for ev in exported["traceEvents"] if ev["ph"] == "X"]
    assert xs and all(ev["ts"] * 1000 < exported["otherData"]["window_ns"][1] for ev in xs)
    # a second run from the selector: its own numbers
    page.select_option("#trace-select", index=2)
    page.click("#nav-overview")
    other = _report(root / "num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    page.wait_for_function(
        "(v) => document.querySelector('#step-avg')?.textContent === v",
        arg=shown_us(other["breakdown"]["step_avg_us"]), timeout=60_000)
    assert not page.errors, page.errors


def test_hostile_names_are_shown_as_text(page: Any, serve: Any, tmp_path: Path) -> None:
    dashboard_trace(tmp_path)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    server = serve(str(tmp_path))
    page.goto(server.url + "#/kernels")
    page.wait_for_selector("#kernels-table")
    names = page.locator("#kernels-table td[data-key='name']").all_inner_texts()
    assert EVIL_KERNEL in names
    page.click("#nav-operators")
    page.wait_for_selector("#operators-table")
    assert EVIL_OP in page.locator("#operators-table td[data-key='name']").all_inner_texts()
    assert page.locator("img").count() == 0 and page.locator("main script").count() == 0
    page.click("#nav-timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']")
    assert not dialogs
    shot(page, "hostile-names")


@pytest.mark.parametrize("trace", [
    f"{RESNET}/num_workers_4/worker0.1623212756351.pt.trace.json.gz",
    "hta/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz",
])
def test_html_report_from_file_url(page: Any, tmp_path: Path, trace: str) -> None:
    from stepscope.report.html import write_html

    path = shared_trace(trace)
    rep = build_report(load_trace(str(path)), top=20)
    out = tmp_path / "report.html"
    write_html(rep, str(out))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    name = "html-" + path.name.split(".")[0]
    report = rep.to_json()
    check_overview(page, report, name)
    check_tables(page, report, name)
    got = drive_timeline(page, name)
    assert got["launch"].startswith(("cuda", "hip"))
    assert page.locator("#timeline-cap").count() == 1
    # nothing but the file itself (and in-page blob/data URLs) was requested: no network
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requests), requests
    assert not page.errors, page.errors


def test_progress_is_shown_while_a_trace_loads(page: Any, serve: Any, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    import stepscope.formats

    path = dashboard_trace(tmp_path)
    release = threading.Event()
    real = stepscope.formats.load_trace

    def slow_load(path: str, **kwargs: Any) -> Any:
        kwargs["progress"](50, 100)
        release.wait(30)
        return real(path, use_cache=False)

    monkeypatch.setattr(stepscope.formats, "load_trace", slow_load)
    # in this process (no cache): with the cache the load runs in a forked child, which the
    # event set here would never release
    server = serve(str(tmp_path), use_cache=False)
    page.goto(server.url)
    page.wait_for_selector("#progress")
    # a selector, not wait_for_function: polling a JS string needs eval, which the CSP forbids
    page.wait_for_selector("#progress >> text=50 %")
    assert "reading" in page.locator("#progress").inner_text()
    shot(page, "loading-progress")
    release.set()
    page.wait_for_selector("#page-overview", timeout=30_000)
    assert page.locator("#step-avg").inner_text() == \
        shown_us(_report(path)["breakdown"]["step_avg_us"]) == "1.000"  # 1000 µs steps


def test_each_column_picks_its_unit(page: Any, serve: Any, tmp_path: Path) -> None:
    """Steps of 1.5 s read in s, their kernels (300 µs and 1.5 µs) stay in µs: one unit per
    column or card, from its largest value."""
    path = dashboard_trace(tmp_path, steps=2, step_us=1.5e6)
    report = _report(path)
    server = serve(str(tmp_path))
    page.goto(server.url)
    page.wait_for_selector("#page-overview", timeout=60_000)
    assert time_unit([report["breakdown"]["step_avg_us"]])[0] == "s"
    check_overview(page, report, "units-seconds")  # the step average in s
    assert page.locator("#step-avg").inner_text() == "1.500"
    ks = sorted(report["kernels"], key=lambda r: -r["total_us"])
    assert time_unit(column(ks, "total_us"))[0] == "µs"
    page.click("#nav-kernels")
    page.wait_for_selector("#kernels-table")
    assert page.locator("#kernels-table th[data-key='total_us']").inner_text() == "total µs ▼"
    cells = page.locator("#kernels-table td[data-key='total_us']").all_inner_texts()
    assert cells == [shown_us(k["total_us"], column(ks, "total_us")) for k in ks]
    assert cells[0] == "600.000"  # 2 steps x 300 µs
    shot(page, "units-kernels")
    assert not page.errors, page.errors
