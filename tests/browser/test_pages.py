"""The analysis pages (memory, modules, efficiency, Nsight) in Debian's chromium, on real traces:
the numbers shown equal the JSON report's."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from tests.browser.conftest import shot
from tests.browser.helpers import columns, shown_us, signed, size_text, time_text, time_unit
from tests.conftest import shared_trace

QWEN = "outside/tracelens-h100-qwen"
QWEN_FILE = "Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _report(path: Path) -> dict[str, Any]:
    return build_report(load_trace(str(path)), top=1000).to_json()


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text()).strip()


def check_memory(page: Any, report: dict[str, Any], name: str) -> None:
    page.click("#nav-memory")
    page.wait_for_selector("#memory-chart canvas", timeout=60_000)
    for d in report["memory"]["devices"]:
        card = f".card.mem[data-device='{d['device']}']"
        assert text(page, f"{card} td[data-key='peak_allocated_bytes']") == \
            size_text(d["peak_allocated_bytes"])
        assert text(page, f"{card} td[data-key='peak_us']") == time_text(d["peak_us"])
        a = d["allocations"]
        assert text(page, f"{card} td[data-key='allocs']") == f"{a['count']:,} / {a['frees']:,}"
    devs = report["memory"]["devices"]
    gpu = next(i for i, d in enumerate(devs) if d["device"].startswith("GPU"))
    page.select_option("#memory-device", str(gpu))
    d = devs[gpu]
    page.wait_for_selector("#memory-operators")
    ops = sorted(d["operators"], key=lambda r: -r["allocation_size_bytes"])
    row = page.locator("#memory-operators tbody tr").first
    assert row.locator("td[data-key='name']").inner_text() == ops[0]["name"]
    assert row.locator("td[data-key='allocation_size_bytes']").inner_text() == \
        size_text(ops[0]["allocation_size_bytes"])
    assert page.locator("#memory-operators tbody tr").count() == len(ops)
    if d["allocations"]["largest"]:
        big = d["allocations"]["largest"][0]
        row = page.locator("#memory-allocations tbody tr").first
        assert row.locator("td[data-key='size_bytes']").inner_text() == size_text(big["size_bytes"])
        assert page.locator("#memory-allocations tbody tr").count() == \
            len(d["allocations"]["largest"])
    # zoom: the wheel over the curve narrows the x axis (ECharts dataZoom)
    box = page.locator("#memory-chart").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    before = page.locator("#memory-chart").screenshot()
    for _ in range(4):
        page.mouse.wheel(0, -300)
    page.wait_for_timeout(300)
    assert page.locator("#memory-chart").screenshot() != before
    shot(page, f"{name}-memory")


def test_memory_page_on_a_real_trace(page: Any, serve: Any) -> None:
    root = shared_trace(QWEN)
    report = _report(root / QWEN_FILE)
    server = serve(str(root))
    page.goto(server.url + f"#/overview?trace={QWEN_FILE}")
    page.wait_for_selector("#page-overview", timeout=60_000)
    check_memory(page, report, "qwen")
    assert not page.errors, page.errors


def check_modules(page: Any, report: dict[str, Any], name: str) -> None:
    page.click("#nav-modules")
    page.wait_for_selector("#modules-table", timeout=60_000)
    mods = report["modules"]
    assert text(page, "#module-events") == str(mods["module_events"])
    card = [mods["device_us_in_modules"], mods["device_us_total"]]
    assert text(page, "#device-in-modules") == shown_us(card[0], card)
    nodes = mods["nodes"]
    roots = [n for n in nodes if n["parent"] == -1]
    first = [n for n in nodes if n["depth"] == 0 or n["parent"] in {r["id"] for r in roots}]
    rows = page.locator("#modules-table tbody tr")
    assert rows.count() == len(first)  # roots open, their children shown
    root = page.locator(f"#modules-table tr[data-id='{roots[0]['id']}']")
    # related columns share a unit: the four totals, the two per-call times
    totals = columns(nodes, "host_total_us", "host_self_us", "device_total_us", "device_self_us")
    per_call = columns(nodes, "mean_us", "max_call_us")
    for key in ("host_total_us", "device_total_us", "device_self_us", "max_call_us"):
        assert root.locator(f"td[data-key='{key}']").inner_text() == \
            shown_us(roots[0][key], per_call if key == "max_call_us" else totals)
    # collapse the root, expand all
    root.locator("button.twisty").click()
    assert rows.count() == len(roots)
    page.click("#modules-expand")
    assert rows.count() == len(nodes)
    deep = max(nodes, key=lambda n: (n["depth"], n["device_total_us"]))
    row = page.locator(f"#modules-table tr[data-id='{deep['id']}']")
    assert row.locator("td[data-key='name']").inner_text().strip() == deep["name"]
    assert row.locator("td[data-key='device_total_us']").inner_text() == \
        shown_us(deep["device_total_us"], totals)
    # flame view: one box per module wide enough to draw; clicking a child zooms into it
    boxes = page.locator("#modules-flame svg g")
    assert boxes.count() > len(roots)
    shot(page, f"{name}-modules")
    child = next(n for n in nodes if n["parent"] == roots[0]["id"])
    page.locator(f"#modules-flame svg g[data-id='{child['id']}']").click()
    page.wait_for_selector("#flame-reset")
    assert page.locator("#modules-flame svg g").first.get_attribute("data-id") == str(child["id"])


def test_modules_page_on_a_real_trace(page: Any, serve: Any) -> None:
    root = shared_trace(QWEN)
    report = _report(root / QWEN_FILE)
    server = serve(str(root))
    page.goto(server.url + f"#/modules?trace={QWEN_FILE}")
    page.wait_for_selector("#page-overview, #page-modules", timeout=60_000)
    check_modules(page, report, "qwen")
    assert not page.errors, page.errors


def check_efficiency(page: Any, report: dict[str, Any], name: str) -> None:
    page.click("#nav-efficiency")
    page.wait_for_selector("#roofline-chart canvas", timeout=60_000)
    e = report["efficiency"]
    assert text(page, "#mfu") == f"{e['mfu_pct']:.2f}"
    assert text(page, "#hfu") == f"{e['hfu_pct']:.2f}"
    assert text(page, "#total-gflop") == f"{e['total_gflop']:,.3f}"  # grouped: 5,765.705
    assert text(page, "#modelled-pct") == f"{e['modelled_time_pct']:.2f}"
    fams = e["time_by_family_us"]
    assert text(page, "#efficiency-families th:nth-child(2)") == time_unit(fams.values())[0]
    for fam, v in fams.items():
        assert text(page, f"#efficiency-families tr[data-family='{fam}'] td[data-key='us']") == \
            shown_us(v, fams.values())
    rows = page.locator("#efficiency-points tbody tr")
    assert rows.count() == len(e["kernels"])
    top = max(e["kernels"], key=lambda r: r["time_us"])
    assert rows.first.locator("td[data-key='name']").inner_text() == top["name"]
    assert rows.first.locator("td[data-key='tflops_per_s']").inner_text() == \
        f"{top['tflops_per_s']:,.3f}"
    steps = page.locator("#efficiency-steps tbody tr")
    assert steps.count() == len(e["steps"])
    assert steps.first.locator("td[data-key='mfu_pct']").inner_text() == \
        f"{e['steps'][0]['mfu_pct']:,.3f}"
    shot(page, f"{name}-efficiency")
    page.select_option("#roofline-points", "operators")
    page.wait_for_selector("#roofline-chart canvas")
    assert rows.count() == len(e["operators"])
    top = max(e["operators"], key=lambda r: r["time_us"])
    assert rows.first.locator("td[data-key='name']").inner_text() == top["name"]
    assert rows.first.locator("td[data-key='pct_roofline']").inner_text() == \
        f"{top['pct_roofline']:.2f}"


def test_efficiency_page_on_a_real_trace(page: Any, serve: Any) -> None:
    root = shared_trace(QWEN)
    report = _report(root / QWEN_FILE)
    server = serve(str(root))
    page.goto(server.url + f"#/overview?trace={QWEN_FILE}")
    page.wait_for_selector("#page-overview", timeout=60_000)
    check_efficiency(page, report, "qwen")
    assert not page.errors, page.errors


def ns(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:.1f}"


def check_nsight(page: Any, report: dict[str, Any], name: str) -> None:
    page.click("#nav-nsight")
    page.wait_for_selector("#nsys-summary", timeout=60_000)
    nsys = report["nsys"]
    for key, sort in (("cuda_gpu_kern_sum", "total_ns"), ("cuda_api_sum", "total_ns"),
                      ("cuda_gpu_mem_size_sum", "total_bytes"), ("nvtx_sum", "total_ns")):
        page.click(f"#tab-{key}")
        rows = page.locator("#nsys-summary tbody tr")
        assert rows.count() == len(nsys[key])
        top = max(nsys[key], key=lambda r: r[sort])
        first = rows.first
        label = "name" if "name" in top else "operation"
        assert first.locator(f"td[data-key='{label}']").inner_text() == top[label]
        for col in (sort, "count", "avg_ns" if "avg_ns" in top else "avg_bytes"):
            assert first.locator(f"td[data-key='{col}']").inner_text() == ns(top[col]), (key, col)
        if key == "cuda_gpu_kern_sum":
            shot(page, f"{name}-nsight")
    if nsys["nvtx_ranges"]:
        assert page.locator("#nvtx-view rect.range").count() == len(nsys["nvtx_ranges"])
        page.locator("#nvtx-view").scroll_into_view_if_needed()
        shot(page, f"{name}-nvtx")


def test_nsight_page_on_an_nsys_export(page: Any, serve: Any) -> None:
    root = shared_trace("nsys/nvidia-fuser")
    name = "a049892_report1.sqlite"
    report = _report(root / name)
    server = serve(str(root))
    page.goto(server.url + f"#/nsight?trace={name}")
    page.wait_for_selector("#page-nsight, #page-overview", timeout=120_000)
    options = page.locator("#trace-select option").all_inner_texts()
    assert sum(o.endswith("_report1") or "report" in o for o in options) == 3  # the .sqlite files
    check_nsight(page, report, "nsys-fuser")
    assert not page.errors, page.errors


def test_pages_in_the_html_report(page: Any, tmp_path: Path) -> None:
    """The same pages from the single-file report opened from file:// (data inlined)."""
    from stepscope.report.html import write_html

    path = shared_trace(QWEN) / QWEN_FILE
    rep = build_report(load_trace(str(path)), top=1000)
    out = tmp_path / "report.html"
    write_html(rep, str(out))
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-overview", timeout=60_000)
    report = rep.to_json()
    check_memory(page, report, "html-qwen")
    check_modules(page, report, "html-qwen")
    check_efficiency(page, report, "html-qwen")
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requests), requests
    assert not page.errors, page.errors


def test_compare_page_on_two_real_runs(page: Any, serve: Any) -> None:
    from stepscope.analysis.compare.diff import diff_runs
    from stepscope.report.diff_load import summary_from_report
    from stepscope.report.json.diff import diff_to_json

    root = shared_trace("kineto_resnet50")
    base = "num_workers_0/worker0.1623143089861.pt.trace.json.gz"
    new = "num_workers_4/worker0.1623212756351.pt.trace.json.gz"
    docs = [_report(root / t) for t in (base, new)]
    diff = diff_to_json(diff_runs(
        replace(summary_from_report(docs[0], base, complete=True), kind="trace"),
        replace(summary_from_report(docs[1], new, complete=True), kind="trace")))
    server = serve(str(root))
    page.goto(server.url + f"#/compare?trace={base}")
    page.wait_for_selector("#diff-new option", state="attached", timeout=60_000)
    page.select_option("#diff-new", new)
    page.wait_for_selector("#diff-step-delta", timeout=120_000)
    st = diff["step_time"]  # one unit for the page, the step time's: ms for ~100 ms steps
    unit = [st["base_us"], st["new_us"]]
    assert time_unit(unit)[0] == "ms"
    assert text(page, "#diff-step-base") == shown_us(st["base_us"], unit)
    assert text(page, "#diff-step-new") == shown_us(st["new_us"], unit)
    assert text(page, "#diff-step-delta") == signed(st["delta_us"], unit)
    assert text(page, "#diff-verdict") == st["verdict"]
    assert text(page, "#diff-noise") == st["noise_verdict"]  # the CLI's words for the test
    rows = page.locator("#diff-categories tbody tr")
    spent = [c for c in diff["categories"] if c["base_us"] or c["new_us"]]
    assert rows.count() == len(spent) == 7  # no communication in either run: left out
    for i, c in enumerate(spent[:3]):
        assert rows.nth(i).locator("td[data-key='delta_us']").inner_text() == \
            signed(c["delta_us"], unit)
    assert page.locator("#diff-kernels tbody tr").count() == len(diff["kernels"])
    # per-step tests in the dashboard too: every kernel row says yes or no
    sig = page.locator("#diff-kernels tbody td[data-key='significant']").all_inner_texts()
    assert sig and set(sig) <= {"yes", "no"}
    shot(page, "resnet-compare")
    # the API answers bad parameters with 4xx
    assert page.request.get(server.url + "api/diff?base=" + base).status == 400
    assert page.request.get(server.url + f"api/diff?base={base}&new=../x").status == 404
    assert not page.errors, page.errors


def test_tensorrt_page_on_trtexec_outputs(page: Any, serve: Any) -> None:
    from stepscope.formats.tensorrt.load import load_trt_run
    from stepscope.report.tensorrt import build_trt_report

    root = shared_trace("tensorrt/trex/examples/pytorch/resnet/A100")
    trace = "fp16/resnet.onnx.engine.profile.json"
    report = build_trt_report(load_trt_run(str(root / trace)), top=1000).to_json()
    t = report["tensorrt"]
    server = serve(str(root))
    page.goto(server.url + f"#/tensorrt?trace={trace}")
    page.wait_for_selector("#trace-select option", state="attached")
    # one entry per engine (its 5-6 trex files are one run)
    assert page.locator("#trace-select option").count() == 5
    page.wait_for_selector("#page-tensorrt", timeout=60_000)
    assert text(page, "#trt-engine") == t["engine"]
    assert text(page, "#trt-precision") == t["engine_precision"]
    assert text(page, "#trt-inference") == f"{t['inference_ms']:.4f}"
    for k, m in t["summary"]["metrics"].items():
        assert text(page, f"#trt-metrics tr[data-metric='{k}'] td[data-key='mean_ms']") == \
            f"{m['mean_ms']:.4f}"
    rows = page.locator("#trt-layers tbody tr")
    assert rows.count() == len(t["layers"])
    for i in (0, len(t["layers"]) - 1):
        assert rows.nth(i).locator("td[data-key='name']").inner_text() == t["layers"][i]["name"]
        assert rows.nth(i).locator("td[data-key='average_ms']").inner_text() == \
            f"{t['layers'][i]['average_ms']:.4f}"
    mix = page.locator("#trt-precision-mix tbody tr")
    assert mix.first.locator("td[data-key='share_pct']").inner_text() == \
        f"{t['precision_mix'][0]['share_pct']:.2f}"
    assert page.locator("#page-tensorrt .finding").count() == len(report["findings"])
    # trace pages are hidden for a TensorRT run; its timeline API answers 404, not 500
    assert page.locator("#nav-timeline").count() == 0
    assert page.request.get(server.url + f"api/timeline/meta?trace={trace}").status == 404
    page.wait_for_selector("#trt-iterations canvas")
    shot(page, "trt-a100-fp16")
    assert not page.errors, page.errors


def test_nsight_page_in_the_html_report_with_ncu(page: Any, tmp_path: Path) -> None:
    """An nsys export with a real Nsight Compute CSV joined, from file://: both tables."""
    from stepscope.formats.nsight.ncu import load_ncu
    from stepscope.report.html import write_html

    ncu_csv = Path(__file__).resolve().parents[1] / "data" / "ncu" / "superbench_cublaslt_ncu.log"
    path = shared_trace("nsys/nvidia-fuser") / "ce15be9_report1.sqlite"
    rep = build_report(load_trace(str(path)), top=1000, ncu=load_ncu(str(ncu_csv)))
    out = tmp_path / "report.html"
    write_html(rep, str(out))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-overview", timeout=60_000)
    report = rep.to_json()
    check_nsight(page, report, "html-nsys")
    kernels = report["ncu"]["kernels"]
    rows = page.locator("#ncu-table tbody tr")
    assert rows.count() == len(kernels) > 0
    top = max(kernels, key=lambda k: k["duration_ns"] or 0)
    assert rows.first.locator("td[data-key='name']").inner_text() == top["name"]
    assert rows.first.locator("td[data-key='duration_ns']").inner_text() == ns(top["duration_ns"])
    sm = top["sm_throughput_pct"]
    assert rows.first.locator("td[data-key='sm_throughput_pct']").inner_text() == \
        ("—" if sm is None else f"{sm:.2f}")
    page.locator("#ncu-table").scroll_into_view_if_needed()
    shot(page, "html-nsys-ncu")
    assert not page.errors, page.errors


def test_memory_page_on_a_legacy_cumulative_trace(page: Any, serve: Any) -> None:
    """PyTorch < 1.10 records: running-sum curves, the note shown, no matched allocations."""
    root = shared_trace("kineto_resnet50/num_workers_0")
    name = "worker0.1623143089861.pt.trace.json.gz"
    report = _report(root / name)
    server = serve(str(root))
    page.goto(server.url + f"#/overview?trace={name}")
    page.wait_for_selector("#page-overview", timeout=60_000)
    check_memory(page, report, "resnet-nw0")
    assert text(page, "#memory-note") == report["memory"]["note"]
    assert not page.errors, page.errors


def test_overview_of_an_amd_trace_in_the_html_report(page: Any, tmp_path: Path) -> None:
    """AMD: the matrix-core label, "—" alone where the trace has no value, warnings as text."""
    from stepscope.report.html import write_html

    path = shared_trace("outside/tracelens-mi300-qwen") / QWEN_FILE
    rep = build_report(load_trace(str(path)))
    out = tmp_path / "mi300.html"
    write_html(rep, str(out))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-overview", timeout=60_000)
    report = rep.to_json()
    card = page.locator(".card.gpu").first
    assert report["tensor_core_metric"] in card.inner_text()
    assert card.locator("td[data-key='sm_efficiency_pct']").inner_text() == "—"
    assert card.locator("td[data-key='tensor_core_pct']").inner_text() == \
        f"{report['gpu'][0]['tensor_core_pct']:.2f} %"
    assert page.locator("#partial").count() == 0  # nothing was skipped, only repaired
    assert report["source"]["warnings"][0] in page.locator("#page-overview").inner_text()
    shot(page, "html-mi300-overview")
    assert not page.errors, page.errors
