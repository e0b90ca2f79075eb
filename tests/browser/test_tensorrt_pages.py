"""TensorRT pages of the single-file HTML report in Debian's chromium, from file://: the engine
graph (nodes, selection, tooltips) and the engine comparison, numbers equal to the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepscope.report.html import render_document, write_page
from tests.browser.conftest import shot
from tests.conftest import shared_trace
from tests.trt_builders import layer_info_text, names_only_text, profile_text

A100 = "tensorrt/trex/examples/pytorch/resnet/A100"
EVIL_LAYER = '<img src=x onerror=alert(1)><script>alert(2)</script> & "q" \'s {b}'
EVIL_TENSOR = "t<b>1</b>&amp;<svg onload=alert(3)>"


def _trt_page(engine: Path, out: Path) -> dict[str, Any]:
    from stepscope.formats.tensorrt.load import load_trt_run
    from stepscope.report.tensorrt import build_trt_report

    doc = build_trt_report(load_trt_run(str(engine))).to_json()
    write_page(render_document(doc, engine.name, title="TensorRT"), str(out))
    return doc


def _open_graph(page: Any, out: Path) -> Any:
    page.goto(out.as_uri())
    page.wait_for_selector("#trt-graph[data-ready='1']", timeout=60_000)
    page.locator("#trt-graph").scroll_into_view_if_needed()
    return page.locator("#trt-graph")


def _node_px(page: Any, graph: Any, index: int) -> tuple[float, float]:
    """Page coordinates of layer ``index``'s node (the graph publishes them in data-px)."""
    x, y = json.loads(graph.get_attribute("data-px"))[index]
    box = page.locator("#trt-graph-chart").bounding_box()
    return box["x"] + x, box["y"] + y


def _visible(page: Any, graph: Any) -> list[int]:
    box = page.locator("#trt-graph-chart").bounding_box()
    px = json.loads(graph.get_attribute("data-px"))
    return [i for i, (x, y) in enumerate(px)
            if 40 < x < box["width"] - 40 and 40 < y < box["height"] - 20]


def test_engine_graph_nodes_selection_and_table(page: Any, tmp_path: Path) -> None:
    out = tmp_path / "qat.html"
    t = _trt_page(shared_trace(A100) / "qat", out)["tensorrt"]
    layers, edges = t["layers"], t["graph"]["edges"]
    graph = _open_graph(page, out)
    assert int(graph.get_attribute("data-nodes")) == len(t["graph"]["nodes"]) == len(layers) == 37
    assert int(graph.get_attribute("data-tensors")) == 2  # input.1 and 422, the bindings
    assert int(graph.get_attribute("data-edges")) == len(edges)
    assert len(json.loads(graph.get_attribute("data-px"))) == len(layers)
    shot(page, "trt-graph-qat")
    # click the slowest layer on screen: the panel shows its name, ms and tensors
    i = max(_visible(page, graph), key=lambda k: layers[k]["average_ms"])
    page.mouse.click(*_node_px(page, graph, i))
    page.wait_for_selector(f"#trt-layer-detail[data-index='{i}']")
    assert page.locator("#trt-detail-name").inner_text() == layers[i]["name"]
    assert page.locator("#trt-detail-avg").inner_text() == f"{layers[i]['average_ms']:.4f}"
    assert page.locator("#trt-detail-share").inner_text() == f"{layers[i]['share_pct']:.2f}"
    assert page.locator("#trt-detail-precision").inner_text() == layers[i]["precision"]
    assert page.locator("#trt-detail-inputs tbody tr").count() == \
        sum(e["to"] == i for e in edges)
    page.mouse.move(*_node_px(page, graph, i))
    page.wait_for_timeout(300)
    assert layers[i]["name"] in page.locator("#trt-graph-chart").inner_text()  # the tooltip
    shot(page, "trt-graph-qat-selected")
    # a name in the layers table selects that layer and brings its node into view
    last = len(layers) - 1
    page.locator(f"#trt-layers a.layer-link[data-index='{last}']").click()
    page.wait_for_selector(f"#trt-layer-detail[data-index='{last}']")
    assert page.locator("#trt-detail-name").inner_text() == layers[last]["name"]
    page.wait_for_timeout(200)
    assert last in _visible(page, graph)
    assert not page.errors, page.errors


def test_engine_comparison_page(page: Any, tmp_path: Path) -> None:
    from stepscope.cli.pipelines.engine_diff import engine_diff

    root = shared_trace(A100)
    _cmp, doc = engine_diff(str(root / "fp32"), str(root / "fp16"))
    out = tmp_path / "diff.html"
    write_page(render_document(doc, "fp32 vs fp16", title="diff"), str(out))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-engine-compare", timeout=60_000)
    d = doc["tensorrt_diff"]
    assert page.locator("header nav a").all_inner_texts() == ["Engine comparison"]
    assert page.locator("#ediff-a-inference").inner_text() == f"{d['a']['inference_ms']:.4f}"
    assert page.locator("#ediff-b-inference").inner_text() == f"{d['b']['inference_ms']:.4f}"
    assert page.locator("#ediff-speedup").inner_text() == f"{d['speedup']:.2f}×"
    for key in ("inference_ms", "layer_total_ms"):
        row = page.locator(f"#ediff-totals tr[data-key='{key}']")
        assert row.locator("td[data-side='a']").inner_text() == f"{d['a'][key]:.4f}"
        assert row.locator("td[data-side='b']").inner_text() == f"{d['b'][key]:.4f}"
        assert row.locator("td[data-side='delta']").inner_text() == \
            f"{d['b'][key] - d['a'][key]:+.4f}"
    rows = page.locator("#ediff-layers tbody tr")
    assert rows.count() == len(d["matched_layers"]) + len(d["only_a"]) + len(d["only_b"])
    top = d["matched_layers"][0]
    assert rows.first.locator("td[data-key='name']").inner_text() == top["name"]
    assert rows.first.locator("td[data-key='delta_ms']").inner_text() == f"{top['delta_ms']:+.4f}"
    assert rows.first.locator("td[data-key='status']").inner_text() == \
        ("faster" if top["delta_ms"] < 0 else "slower")
    changed = [r for r in d["matched_layers"] if r["a_precision"] != r["b_precision"]]
    assert page.locator("#ediff-precision-changes tbody tr").count() == len(changed) > 0
    mix = page.locator("#ediff-precision-mix tbody tr")
    assert mix.count() == len(d["precision_mix"])
    assert mix.first.locator("td[data-key='b_pct']").inner_text() == \
        f"{d['precision_mix'][0]['b_pct']:.2f}"
    shot(page, "trt-engine-compare")
    assert not page.errors, page.errors


def test_hostile_layer_and_tensor_names_are_text(page: Any, tmp_path: Path) -> None:
    engine = tmp_path / "evil"
    engine.mkdir()
    (engine / "m.engine.profile.json").write_text(
        profile_text([(EVIL_LAYER, 0.5), ("Conv_1 + Relu_2", 1.5)]))
    (engine / "m.engine.graph.json").write_text(layer_info_text([
        {"name": EVIL_LAYER, "type": "Reformat", "inputs": [("input", "Row major linear FP32")],
         "outputs": [(EVIL_TENSOR, "Half")]},
        {"name": "Conv_1 + Relu_2", "inputs": [(EVIL_TENSOR, "Half")],
         "outputs": [("output", "Half")]},
    ]))
    out = tmp_path / "evil.html"
    doc = _trt_page(engine, out)
    assert doc["tensorrt"]["graph"]["nodes"][0]["name"] == EVIL_LAYER
    dialogs: list[str] = []
    page.on("dialog", lambda dlg: (dialogs.append(dlg.message), dlg.dismiss()))
    graph = _open_graph(page, out)
    assert graph.get_attribute("data-nodes") == "2"
    chart = page.locator("#trt-graph-chart")
    # node tooltip and the detail panel show the name literally
    page.mouse.move(*_node_px(page, graph, 0))
    page.wait_for_timeout(300)
    assert EVIL_LAYER in chart.inner_text()
    page.mouse.click(*_node_px(page, graph, 0))
    page.wait_for_selector("#trt-layer-detail[data-index='0']")
    assert page.locator("#trt-detail-name").inner_text() == EVIL_LAYER
    assert page.locator("#trt-detail-outputs td.kname").first.inner_text() == EVIL_TENSOR
    # the edge between the two layers: its tooltip names the tensor, its type and dims
    (x0, y0), (x1, y1) = _node_px(page, graph, 0), _node_px(page, graph, 1)
    page.mouse.move((x0 + x1) / 2, (y0 + y1) / 2)
    page.wait_for_timeout(300)
    tip = chart.inner_text()
    assert EVIL_TENSOR in tip and "FP16 [1×8×4×4]" in tip
    shot(page, "trt-graph-hostile")
    # nothing from the names became markup (the tooltip's own <b> holds the name as text)
    assert page.locator("main img, main script, main svg").count() == 0
    assert page.locator("#trt-graph-chart b").all_inner_texts() == [EVIL_TENSOR]
    assert not dialogs and not page.errors, (dialogs, page.errors)


def test_names_only_layer_info_shows_no_graph(page: Any, tmp_path: Path) -> None:
    """Layer info without --profilingVerbosity=detailed has no tensors: no graph, no empty box."""
    engine = tmp_path / "plain"
    engine.mkdir()
    layers = [("Conv_0 + Relu_1", 0.75), ("Conv_2", 0.25)]
    (engine / "m.engine.profile.json").write_text(profile_text(layers))
    (engine / "m.engine.graph.json").write_text(names_only_text([n for n, _ in layers]))
    out = tmp_path / "plain.html"
    doc = _trt_page(engine, out)
    assert doc["tensorrt"]["graph"] is None
    page.goto(out.as_uri())
    page.wait_for_selector("#trt-layers tbody tr")
    assert page.locator("#trt-layers tbody tr").count() == 2
    assert page.locator("#trt-graph").count() == 0
    assert "Engine graph" not in page.locator("#page-tensorrt").inner_text()
    assert not page.errors, page.errors
