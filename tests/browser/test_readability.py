"""What a reader sees, in Debian's chromium (issues 24/26): one window basis on the Critical
path page of a monitored capture opened with `stepscope view FOLDER`, sizes in the unit that
fits each value, a cue on tables wider than the page, kernel names broken only at natural
points, thousands separators, labels kept with their values."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from tests.browser.conftest import shot
from tests.browser.helpers import shown_us, size_text
from tests.conftest import ROOT, shared_trace

LOADER = ROOT / "tests" / "data" / "monitor_run" / "loader"
LOADER_TRACE = "vm_13337.1795509081314.pt.trace.json.gz"
QWEN = "outside/tracelens-h100-qwen"
QWEN_FILE = "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text()).strip().replace("\xa0", " ")


def _page(browser: Any, width: int) -> Any:
    ctx = browser.new_context(viewport={"width": width, "height": 760})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.errors = errors
    return page


def test_critical_path_of_a_monitored_capture_one_window_basis(browser: Any, serve: Any,
                                                                tmp_path: Path) -> None:
    """`stepscope view` on the folder `stepscope run --monitor` wrote: the cards are the means
    of the table's per-step figures, the text names its step's window from the same basis, and
    the DataLoader line says why the path's data-loading share is not the step's 84 %."""
    folder = tmp_path / "loader"
    shutil.copytree(LOADER, folder)
    report = build_report(load_trace(str(folder / LOADER_TRACE), use_cache=False)).to_json()
    cp = report["critical_path"]
    per = cp["per_window"]
    # the basis: each ProfilerStep's range (no device work here runs past it)
    steps = {f"ProfilerStep#{s['name']}": s for s in report["steps"]}
    assert [w["window"] for w in per] == list(steps)
    assert [w["window_us"] for w in per] == [7744.469, 19483.649, 26082.311]
    assert cp["window_us"] == pytest.approx(sum(w["window_us"] for w in per) / 3, abs=1e-3)
    server = serve(str(folder), use_cache=False)  # the folder itself is the logdir
    for width in (1024, 1440):
        page = _page(browser, width)
        page.goto(server.url + f"#/critical-path?trace={LOADER_TRACE}")
        page.wait_for_selector("#page-critical-path", timeout=60_000)
        card = [cp["length_us"], cp["window_us"]]
        assert _text(page, "#cp-window") == shown_us(cp["window_us"], card) == "17.770"
        assert _text(page, "#cp-length") == shown_us(cp["length_us"], card) == "0.865"
        assert _text(page, "#cp-share") == f"{100 * cp['length_us'] / cp['window_us']:.2f}"
        cells = page.locator("#cp-windows td[data-key='window_us']").all_inner_texts()
        group = [v for w in per for v in (w["length_us"], w["window_us"])]
        assert cells == [shown_us(w["window_us"], group) for w in per] == \
            ["7.744", "19.484", "26.082"]  # ms (the header says so)
        assert "the cards are means over the 3 windows" in _text(page, "#cp-basis")
        assert "268.672 µs of path in the 26.082 ms window of ProfilerStep#4" in \
            _text(page, "#cp-path-text")
        dl = _text(page, "#cp-dataloader")
        assert "(1.91 % of the path)" in dl and "the Overview's 83.83 %" in dl
        assert "a wait with no operator running is not on it" in dl
        shot(page, f"readability-loader-critical-path-{width}")
        assert not page.errors, page.errors
        page.context.close()


@pytest.fixture(scope="module")
def qwen() -> dict[str, Any]:
    return build_report(load_trace(str(shared_trace(QWEN) / QWEN_FILE)), top=1000).to_json()


def test_sizes_counts_cues_and_names_at_1024(browser: Any, serve: Any,
                                             qwen: dict[str, Any]) -> None:
    """The H100 Qwen trace at 1024 px: a 16 B CPU peak reads "16 B" (not "0.00 MiB"); event
    counts are grouped; the kernel table, wider than the page, shows its scroll cue (and
    loses it when scrolled to its end); kernel names wrap only at <wbr> points."""
    server = serve(str(shared_trace(QWEN)))
    page = _page(browser, 1024)
    page.goto(server.url + f"#/overview?trace={QWEN_FILE}")
    page.wait_for_selector("#page-overview", timeout=60_000)
    assert _text(page, "#event-count") == f"{qwen['source']['events']:,}" == "18,221"
    page.click("#nav-memory")
    page.wait_for_selector("#page-memory")
    for d in qwen["memory"]["devices"]:
        got = _text(page, f".card.mem[data-device='{d['device']}'] "
                          "td[data-key='peak_allocated_bytes']")
        assert got == size_text(d["peak_allocated_bytes"])
    cpu = next(d for d in qwen["memory"]["devices"] if d["device"] == "CPU")
    assert cpu["peak_allocated_bytes"] == 16
    assert _text(page, ".card.mem[data-device='CPU'] td[data-key='peak_allocated_bytes']") == \
        "16 B"
    assert "0.00 MiB" not in page.locator("#page-memory").inner_text()
    page.select_option("#memory-device", label="CPU")
    assert _text(page, "#memory-curve-unit") == "B"  # its 16 B peak, not 0.000016 MiB
    shot(page, "readability-memory-1024")
    page.click("#nav-kernels")
    page.wait_for_selector("#kernels-table")
    frame = page.locator("#kernels-table").locator("xpath=ancestor::div[@class='table-frame']")
    assert frame.get_attribute("data-more") == "right"
    assert _text(page, "#kernels-table-scroll-cue") == "· wider than the page: scroll sideways →"
    page.wait_for_function("""() => getComputedStyle(document.querySelector(
        '#kernels-table').closest('.table-frame'), '::after').opacity === '1'""")  # the shadow
    shot(page, "readability-kernels-1024")
    # every line break inside a kernel name falls at a <wbr> (after ::, <, ,, _ ...)
    breaks = page.evaluate("""() => {
        const bad = [];
        for (const el of document.querySelectorAll('#kernels-table td[data-key=name] .kname')) {
          const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
          let top = null;
          for (let n = walker.nextNode(); n; n = walker.nextNode()) {
            for (let i = 0; i < n.length; i++) {
              const r = document.createRange(); r.setStart(n, i); r.setEnd(n, i + 1);
              const t = Math.round(r.getBoundingClientRect().top);
              if (top !== null && t > top && i > 0) bad.push(n.data.slice(0, i + 1));
              top = t;
            }
          }
        }
        return bad; }""")
    assert breaks == []
    wrapped = page.evaluate("""() => [...document.querySelectorAll(
        '#kernels-table td[data-key=name] .kname')].filter((e) => e.getClientRects().length
        && e.getBoundingClientRect().height > 20).length""")
    assert wrapped > 0  # long names do wrap (at the points), they are not cut
    page.evaluate("""() => { const w = document.querySelector('#kernels-table')
        .closest('.table-wrap'); w.scrollLeft = w.scrollWidth; }""")
    page.wait_for_function("""() => document.querySelector('#kernels-table')
        .closest('.table-frame').dataset.more === 'left'""")
    page.click("#nav-timeline")
    page.wait_for_selector("#timeline-canvas[data-ready='1']", timeout=60_000)
    # the timeline indexes 12,079 of the events (ranges and device ops; no instants)
    assert _text(page, "#timeline-hint").startswith("12,079 events · ")
    assert not page.errors, page.errors
    page.context.close()


def test_labels_stay_with_their_values_at_1024(browser: Any, tmp_path: Path) -> None:
    """A 4-stage pipeline run's page at 1024 px: "theoretical bubble 27.27 %" is one line,
    and the findings keep each number with its unit (no-break spaces)."""
    from stepscope.report.html import render_document
    from stepscope.report.run import build_run_report, find_run

    doc = build_run_report(find_run([str(ROOT / "tests" / "data" / "distributed" /
                                         "pipeline_4stage_1f1b")]),
                           executor="serial", use_cache=False).to_json()
    out = tmp_path / "pipeline.html"
    out.write_text(render_document(doc, "pipeline", title="pipeline"))
    for width in (1024, 700):
        page = _page(browser, width)
        page.goto(out.as_uri())
        page.wait_for_selector("#pipeline-summary", timeout=60_000)
        pairs = page.locator("#pipeline-summary .nowrap")
        assert pairs.count() == 4
        for i in range(pairs.count()):  # the lines its text takes: the distinct tops
            assert pairs.nth(i).evaluate("""(e) => { const r = document.createRange();
                r.selectNodeContents(e); return new Set([...r.getClientRects()]
                .map((x) => Math.round(x.bottom))).size; }""") == 1
        bubble = pairs.nth(3)
        assert bubble.inner_text().replace("\xa0", " ") == \
            f"theoretical bubble {doc['distributed']['pipeline']['theoretical_bubble_pct']:.2f} %"
        evidence = page.locator("#run-findings li").all_inner_texts()
        assert evidence and not any(" %" in e for e in evidence)  # "44\xa0%": never split
        page.locator("#pipeline-summary").scroll_into_view_if_needed()
        shot(page, f"readability-pipeline-{width}")
        assert not page.errors, page.errors
        page.context.close()
