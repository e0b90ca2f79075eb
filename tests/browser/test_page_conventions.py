"""The dashboard's page conventions in Debian's chromium (issue 24 item 5): one unit for related
columns, sticky and keyboard-sortable table headers, kernels by launch configuration, a legible
kernel chart, trtexec folders as one entry, Compare's default pair and choices, pages listed only
with their data, notes styled as notes, titles, one h1, labelled controls, a layout that holds at
1024 px, and the HTML report naming its trace and device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from tests.browser.conftest import shot
from tests.browser.helpers import PER_CALL, columns, shown_us, time_unit
from tests.builders import TraceBuilder
from tests.conftest import shared_trace

QWEN = "outside/tracelens-h100-qwen"
QWEN_FILE = "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"
RESNET = "kineto_resnet50/num_workers_0"
OLD, NEW = "worker0.1623143089861.pt.trace.json.gz", "worker0.1623143566756.pt.trace.json.gz"
TRT = "tensorrt/trex-notebooks-src-2023"


def _report(path: Path) -> dict[str, Any]:
    return build_report(load_trace(str(path)), top=1000).to_json()


def _nav(page: Any) -> list[str]:
    return [str(x) for x in page.locator("header nav a").evaluate_all("as => as.map(a => a.id)")]


def _unlabelled(page: Any) -> list[str]:
    """Form controls with no accessible name (no <label>, no aria-label)."""
    return [str(x) for x in page.evaluate("""() =>
        [...document.querySelectorAll('select, input, textarea')]
        .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label'))
        .map(e => e.id || e.outerHTML.slice(0, 60))""")]


def _overflow(page: Any) -> dict[str, int]:
    return page.evaluate("""() => { const h = document.querySelector('header');
        return {header: h.scrollWidth - h.clientWidth,
                page: document.documentElement.scrollWidth - window.innerWidth}; }""")  # type: ignore[no-any-return]


def test_every_page_has_a_title_one_h1_labels_and_fits_1024(browser: Any, serve: Any) -> None:
    """On a real H100 trace, at 1024 and 1440 px: every listed page sets document.title, has one
    h1, labels every control, and neither the header nor the page overflows sideways."""
    root = shared_trace(QWEN)
    server = serve(str(root))
    for width in (1024, 1440):
        ctx = browser.new_context(viewport={"width": width, "height": 760})
        page = ctx.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e, errors=errors: errors.append(str(e)))
        page.goto(server.url + f"#/overview?trace={QWEN_FILE}")
        page.wait_for_selector("#page-overview", timeout=90_000)
        pages = _nav(page)
        assert {"nav-overview", "nav-kernels", "nav-efficiency"} <= set(pages)
        assert "nav-compare" not in pages  # the only trace of its logdir: nothing to compare
        for nav in pages:
            if nav in ("nav-timeline", "nav-distributed"):
                continue  # the timeline and distributed pages have their own tests
            page.click(f"#{nav}")
            name = nav.removeprefix("nav-")
            page.wait_for_selector(f"header nav a.active#{nav}")
            page.wait_for_timeout(300)
            title = page.locator(f"#{nav}").inner_text()
            assert page.title() == \
                f"{title} · tracelens-h100-qwen / Qwen_Qwen1.5-0.5B-Chat__1016005 · stepscope"
            assert page.locator("h1").count() == 1
            assert page.locator("h1").inner_text().startswith(title)
            assert page.locator(f"#{nav}").get_attribute("aria-current") == "page"
            assert _unlabelled(page) == [], (name, _unlabelled(page))
            assert _overflow(page) == {"header": 0, "page": 0}, (name, width, _overflow(page))
            shot(page, f"conventions-{name}-{width}")
        ctx.close()
        assert not errors, errors


def _units_trace(tmp_path: Path) -> Path:
    """One kernel of 300, 300 and 1500 µs: mean 700 µs, min 300 µs, max 1.5 ms (each column
    alone would pick µs | µs | ms)."""
    b = TraceBuilder()
    for n, dur in enumerate((300.0, 300.0, 1500.0)):
        t = 2000.0 * n
        with b.step(n, t, 2000):
            op = b.op("aten::mm", t + 10, 100, input_dims=[[64, 64], [64, 64]])
            cfg = {"grid": [4 if n < 2 else 640, 1, 1], "block": [128, 1, 1]}
            b.launch(op, "cudaLaunchKernel", t + 20, 5, kernel="gemm", k_ts=t + 30, k_dur=dur,
                     **cfg)
    return b.write(tmp_path, "w.1.pt.trace.json.gz")


def test_kernel_tables_one_unit_configs_sorting_and_sticky_headers(page: Any, serve: Any,
                                                                    tmp_path: Path) -> None:
    path = _units_trace(tmp_path)
    report = _report(path)
    server = serve(str(tmp_path))
    page.goto(server.url + "#/kernels?trace=w.1.pt.trace.json.gz")
    page.wait_for_selector("#kernels-table", timeout=60_000)
    (k,) = report["kernels"]
    unit = time_unit(columns(report["kernels"], *PER_CALL))[0]
    assert unit == "ms"
    heads = [page.locator(f"#kernels-table th[data-key='{c}']").inner_text() for c in PER_CALL]
    assert heads == ["mean ms", "min ms", "max ms"]
    row = page.locator("#kernels-table tbody tr").first
    assert [row.locator(f"td[data-key='{c}']").inner_text() for c in PER_CALL] == \
        [shown_us(k[c], columns(report["kernels"], *PER_CALL)) for c in PER_CALL] == \
        ["0.700", "0.300", "1.500"]
    # the row by name merges two launch configurations: it names none
    assert k["configs"] == 2
    assert row.locator("td[data-key='grid']").inner_text() == "2 configs"
    page.select_option("#kernel-group", "config")
    page.wait_for_selector("#kernel-configs-table")
    rows = page.locator("#kernel-configs-table tbody tr")
    assert rows.count() == len(report["kernels_by_config"]) == 2
    assert rows.nth(0).locator("td[data-key='grid']").inner_text() == "[640, 1, 1]"  # 1.5 ms
    assert rows.nth(1).locator("td[data-key='calls']").inner_text() == "2"
    # keyboard: Tab from the search box reaches the first header; Enter sorts; aria-sort says how
    th = page.locator("#kernel-configs-table th[data-key='total_us']")
    assert th.get_attribute("aria-sort") == "descending"
    page.focus("#kernel-configs-table-search")
    page.keyboard.press("Tab")
    focused = page.evaluate("() => document.activeElement.closest('th')?.dataset.key")
    assert focused == "name"
    page.keyboard.press("Enter")
    name_th = page.locator("#kernel-configs-table th[data-key='name']")
    assert name_th.get_attribute("aria-sort") == "descending"
    assert th.get_attribute("aria-sort") is None
    page.keyboard.press("Enter")
    assert name_th.get_attribute("aria-sort") == "ascending"
    assert not page.errors, page.errors


def test_sticky_headers_and_the_kernel_legend_on_a_real_trace(page: Any, serve: Any) -> None:
    root = shared_trace(QWEN)
    report = _report(root / QWEN_FILE)
    server = serve(str(root))
    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto(server.url + f"#/kernels?trace={QWEN_FILE}")
    page.wait_for_selector("#kernels-table", timeout=90_000)
    # the legend names the ten longest kernels and the rest, each in its own colour
    ks = sorted(report["kernels"], key=lambda r: -r["total_us"])
    items = page.locator("#kernels-legend li")
    assert items.count() == min(10, len(ks)) + (len(ks) > 10)
    colours = items.evaluate_all("ls => ls.map(l => l.dataset.color)")
    assert len(set(colours)) == len(colours)
    assert items.nth(0).locator(".name").inner_text() == ks[0]["name"]
    total = sum(k["total_us"] for k in ks)
    assert items.nth(0).locator(".share").inner_text() == f"{100 * ks[0]['total_us'] / total:.2f} %"
    assert items.last.locator(".name").inner_text() == f"other kernels ({len(ks) - 10})"
    shot(page, "conventions-kernels-chart-1024")
    # scroll the table: its header row stays at the top of the visible table
    wrap = page.locator("#kernels-table").locator("xpath=..")
    wrap.evaluate("w => w.scrollTop = 400")
    page.wait_for_timeout(100)
    head = page.locator("#kernels-table th[data-key='name']").bounding_box()
    box = wrap.bounding_box()
    assert wrap.evaluate("w => w.scrollTop") > 0
    assert abs(head["y"] - box["y"]) < 1.5
    shot(page, "conventions-sticky-1024")
    assert not page.errors, page.errors


def _link(dst: Path, src: Path) -> None:
    """A copy in the test's logdir (the listing skips symlinks)."""
    import shutil

    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(src, dst)


def test_compare_defaults_to_the_two_newest_spans_of_the_run(page: Any, serve: Any) -> None:
    root = shared_trace(RESNET).parent  # num_workers_0 and num_workers_4, two spans each
    server = serve(str(root))
    page.goto(server.url + "#/compare?trace=num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    page.wait_for_selector("#diff-base", timeout=90_000)
    page.wait_for_function("document.querySelector('#diff-new').value != ''")
    assert page.locator("#diff-base").input_value() == \
        "num_workers_4/worker0.1623212756351.pt.trace.json.gz"
    assert page.locator("#diff-new").input_value() == \
        "num_workers_4/worker0.1623213129365.pt.trace.json.gz"
    assert not page.errors, page.errors


def test_compare_runs_before_to_after_and_offers_no_engines(page: Any, serve: Any,
                                                           tmp_path: Path) -> None:
    """The demo's layout: runs `after` and `before` (listed in that order), one span each, and
    a TensorRT engine folder beside them: before → after by capture time; no engine offered."""
    src = shared_trace(RESNET)
    trt = shared_trace(TRT)
    _link(tmp_path / "after" / NEW, src / NEW)
    _link(tmp_path / "before" / OLD, src / OLD)
    for name in ("profile.json", "layer_info.json", "trt.out"):
        _link(tmp_path / "engine" / name, trt / name)
    server = serve(str(tmp_path))
    page.goto(server.url + f"#/compare?trace=after/{NEW}")
    page.wait_for_selector("#diff-base", timeout=90_000)
    page.wait_for_function("document.querySelector('#diff-new').value != ''")
    assert page.locator("#diff-base").input_value() == f"before/{OLD}"
    assert page.locator("#diff-new").input_value() == f"after/{NEW}"
    options = page.locator("#diff-base option").evaluate_all("os => os.map(o => o.value)")
    assert options == ["", f"after/{NEW}", f"before/{OLD}"]
    # the engine is one entry in the logdir's picker, and not offered here
    traces = page.locator("#trace-select option").evaluate_all("os => os.map(o => o.value)")
    assert "engine" in traces and not any(t.startswith("engine/") for t in traces)
    shot(page, "conventions-compare-default")
    assert not page.errors, page.errors


def test_pages_are_listed_only_with_their_data(page: Any, serve: Any, tmp_path: Path) -> None:
    (tmp_path / "bad.pt.trace.json").write_text('{"traceEvents": [')  # truncated
    _units_trace(tmp_path)
    server = serve(str(tmp_path))
    # while a trace loads, no page is listed (the route keeps answering "still loading")
    progress = {"state": "reading", "done": 1, "total": 4, "error": None, "elapsed_s": 0.5}
    page.route("**/api/report?trace=w.1*", lambda route: route.fulfill(
        status=202, content_type="application/json", body=json.dumps(progress)))
    page.goto(server.url + "#/kernels?trace=w.1.pt.trace.json.gz")
    page.wait_for_selector("#progress")
    page.wait_for_timeout(700)  # a few polls
    assert _nav(page) == []
    assert page.title() == f"loading · {tmp_path.name} / w / 1 · stepscope"
    assert page.locator("h1").inner_text() == f"Loading · {tmp_path.name} / w / 1"
    page.unroute("**/api/report?trace=w.1*")
    # a trace that fails to load: the error, no pages
    page.goto(server.url + "#/overview?trace=bad.pt.trace.json")
    page.wait_for_selector("#load-error", timeout=60_000)
    assert _nav(page) == []
    assert "bad.pt.trace.json" in page.locator("#load-error").inner_text()
    assert page.locator("h1").inner_text().startswith("Error · ")
    assert page.locator("#load-error").get_attribute("class") == "error"
    shot(page, "conventions-load-error")
    # once loaded, the pages whose data the report has
    page.goto(server.url + "#/kernels?trace=w.1.pt.trace.json.gz")
    page.wait_for_selector("#page-kernels", timeout=60_000)
    assert "nav-kernels" in _nav(page) and "nav-memory" not in _nav(page)


def test_notes_are_styled_as_notes(page: Any, serve: Any) -> None:
    root = shared_trace("hta/cpu_only")
    (name,) = [p.name for p in root.iterdir() if p.name.endswith(".json.gz")]
    report = _report(root / name)
    assert report["notes"]
    server = serve(str(root))
    page.goto(server.url + f"#/overview?trace={name}")
    page.wait_for_selector("#report-notes", timeout=90_000)
    assert "nav-kernels" not in _nav(page) and "nav-timeline" in _nav(page)  # no GPU kernels
    notes = page.locator("#report-notes li")
    assert notes.all_inner_texts() == report["notes"]
    assert page.locator("#report-notes").get_attribute("role") == "note"
    style = page.locator("#report-notes").evaluate(
        "e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]")
    red = "rgb(176, 42, 42)"  # the error colour
    assert style[0] != red and style[1] != "rgba(0, 0, 0, 0)"
    shot(page, "conventions-notes")
    assert not page.errors, page.errors


def test_html_report_names_trace_and_device(page: Any, tmp_path: Path) -> None:
    from stepscope.report.html import write_html

    path = shared_trace(QWEN) / QWEN_FILE
    rep = build_report(load_trace(str(path)))
    out = write_html(rep, str(tmp_path / "r.html"))
    page.set_viewport_size({"width": 1024, "height": 700})
    page.goto(Path(out).as_uri())
    page.wait_for_selector("#page-overview", timeout=60_000)
    subject = page.locator("#report-subject").inner_text()
    label = rep.to_json()["devices"][0]["label"]
    assert QWEN_FILE in subject and label in subject and label.startswith("NVIDIA H100")
    assert page.title().startswith("Overview · ")
    assert page.locator("h1").count() == 1
    assert _overflow(page) == {"header": 0, "page": 0}
    shot(page, "conventions-html-report-1024")
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [1024, 1440])
def test_tensorrt_folder_page(browser: Any, serve: Any, width: int) -> None:
    """A trtexec output folder is one entry whose TensorRT page has its precision, times and
    findings together; its notes (if any) are notes."""
    trt = shared_trace(TRT)
    server = serve(str(trt.parent))
    ctx = browser.new_context(viewport={"width": width, "height": 800})
    page = ctx.new_page()
    page.goto(server.url + "#/tensorrt?trace=trex-notebooks-src-2023")
    page.wait_for_selector("#page-tensorrt", timeout=90_000)
    assert page.locator("#trt-precision").inner_text() == "INT8"
    assert page.locator("#page-tensorrt .finding").count() == 2
    assert _overflow(page)["header"] == 0
    shot(page, f"conventions-tensorrt-folder-{width}")
    ctx.close()


def test_roofline_points_above_their_roof_are_flagged(page: Any, serve: Any,
                                                      tmp_path: Path) -> None:
    """A 1024³ bf16 matmul in 1 µs (2,147 TFLOP/s on an H100, peak 989.5): its point is a
    triangle, a warning counts it, and the table says why."""
    b = TraceBuilder()
    for n in range(2):
        t0 = n * 100.0
        b.annotation(f"ProfilerStep#{n + 1}", t0, 100)
        bf16 = ["c10::BFloat16", "c10::BFloat16"]
        mm = b.op("aten::mm", t0 + 10, 30, input_dims=[[1024, 1024], [1024, 1024]],
                  input_types=bf16)
        b.launch(mm, "cudaLaunchKernel", t0 + 12, 3, kernel="sm90_xmma_gemm_bf16bf16_bf16f32",
                 k_ts=t0 + 20, k_dur=1.0)
    path = b.write(tmp_path, "fast.1.pt.trace.json.gz")
    report = _report(path)
    flagged = [p for p in report["efficiency"]["kernels"] if p["above_roof"]]
    assert len(flagged) == 1 and flagged[0]["above_roof"].startswith("peak: 2.2x the bf16 peak")
    server = serve(str(tmp_path))
    page.goto(server.url + "#/efficiency?trace=fast.1.pt.trace.json.gz")
    page.wait_for_selector("#roofline-chart canvas", timeout=60_000)
    assert page.locator("#above-roof").inner_text().startswith("1 point sits above its roof")
    cell = page.locator("#efficiency-points td[data-key='above_roof']").first
    assert cell.inner_text() == f"⚠ {flagged[0]['above_roof']}"
    shot(page, "conventions-roofline-above")
    assert not page.errors, page.errors


@pytest.mark.parametrize("width", [1024, 1440])
def test_system_page_of_a_monitored_run(browser: Any, serve: Any, tmp_path: Path,
                                        width: int) -> None:
    """`stepscope view` on a folder where `stepscope run --monitor` wrote the trace, monitor.json
    and monitor.parquet: the System page shows the verdict, its evidence, the phases and the
    sampled series; the DataLoader finding cites the monitor."""
    import shutil

    src = Path(__file__).resolve().parents[1] / "data" / "monitor_run" / "loader"
    run = tmp_path / "loader"
    shutil.copytree(src, run)
    trace = "vm_13337.1795509081314.pt.trace.json.gz"
    system = _report(run / trace)["system"]
    server = serve(str(tmp_path), use_cache=False)
    ctx = browser.new_context(viewport={"width": width, "height": 800})
    page = ctx.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(server.url + f"#/system?trace=loader/{trace}")
    page.wait_for_selector("#page-system", timeout=60_000)
    assert page.locator("#system-bound").inner_text() == "input"
    assert page.locator("#system-confidence").inner_text() == "high confidence"
    assert page.locator("#system-reason").inner_text() == f"why: {system['verdict']['reason']}"
    ev = system["verdict"]["evidence"]
    assert page.locator("#system-evidence tr[data-key='data_share'] td.num").inner_text() == \
        f"{100 * ev['data_share']:.2f} %"
    assert page.locator("#system-evidence tr[data-key='workers'] td.num").inner_text() == "2"
    assert page.locator("#system-phasebar span[data-phase='data']").count() == 1
    for chart in ("system-phases", "system-cpu", "system-host", "system-rss", "system-io"):
        page.wait_for_selector(f"#{chart} canvas")
    assert page.locator("#system-gpu").count() == 0  # no GPU on the machine that ran it
    m = system["metrics"]["workers_cpu"]
    assert page.locator("#system-metrics tr[data-key='workers_cpu'] td[data-q='max']"
                        ).inner_text() == f"{m['max']:.2f} %"
    assert _overflow(page) == {"header": 0, "page": 0}
    assert page.locator("h1").count() == 1 and page.title().startswith("System · ")
    shot(page, f"conventions-system-{width}")
    page.click("#nav-findings")
    page.wait_for_selector("#page-findings .finding")
    assert "stepscope monitor, over its" in page.locator("#page-findings").inner_text()
    ctx.close()
    assert not errors, errors


def test_compare_is_listed_only_with_a_second_comparable_input(page: Any, serve: Any,
                                                               tmp_path: Path) -> None:
    """One trace and a TensorRT engine: nothing to compare the trace with, no Compare page;
    a second trace: Compare is listed."""
    src = shared_trace(RESNET)
    trt = shared_trace(TRT)
    _link(tmp_path / "a" / OLD, src / OLD)
    for name in ("profile.json", "layer_info.json", "trt.out"):
        _link(tmp_path / "engine" / name, trt / name)
    server = serve(str(tmp_path))
    page.goto(server.url + f"#/overview?trace=a/{OLD}")
    page.wait_for_selector("#page-overview", timeout=90_000)
    assert "nav-compare" not in _nav(page) and "nav-timeline" in _nav(page)
    _link(tmp_path / "b" / NEW, src / NEW)
    page.wait_for_selector("#nav-compare", timeout=20_000)  # the listing refreshes every 5 s
    assert not page.errors, page.errors
