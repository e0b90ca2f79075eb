"""TensorRT analysis, advice rules (firing + silent), engine comparison, nsys kernel mapping."""

from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import numpy as np
import pytest
from tests.trt_builders import nsys_sqlite, run

from stepscope.advice.rules import TRT_RULES
from stepscope.advice.rules.tensorrt.context import TrtContext
from stepscope.advice.tensorrt import advise_tensorrt
from stepscope.analysis.tensorrt.diff import compare_engines, layer_nodes
from stepscope.analysis.tensorrt.engine import (
    analyse_tensorrt,
    stat_of,
    summary_from_times,
    trtexec_percentile,
    with_gpu_times,
)
from stepscope.analysis.tensorrt.kernels import layer_gpu_times
from stepscope.errors import TraceFormatError
from stepscope.formats.tensorrt.exports import read_times
from stepscope.formats.tensorrt.nsys import layer_of_range, read_layer_kernels
from stepscope.report.tensorrt import TrtReport, tensorrt_json
from stepscope.report.text.tensorrt_diff import render_engine_diff

BASE = [  # name, avg ms, type, in dtype, out dtype
    ("QuantizeLinear_2", 0.10, "Reformat", "FP32", "INT8"),
    ("w + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)", 0.50, "CaskConvolution", "INT8", "INT8"),
    ("Conv_20 + Relu_21", 0.30, "CaskConvolution", "INT8", "INT8"),
    (
        "Reformatting CopyNode for Output Tensor 0 to Conv_20 + Relu_21",
        0.05,
        "Reformat",
        "INT8",
        "INT8",
    ),
    ("Softmax_30", 0.05, "CudaSoftMax", "FP32", "FP32"),
]
INT8 = (("Precision", "FP32+FP16+INT8"),)


def test_layer_table_reformats_precision_graph() -> None:
    a = analyse_tensorrt(run(BASE, options=INT8))
    assert a.layer_total_ms == pytest.approx(1.0)
    assert [r.share_pct for r in a.layers] == pytest.approx([10, 50, 30, 5, 5])
    assert a.layers[1].calls == 10 and a.layers[1].time_ms == pytest.approx(5.0)
    assert a.reformats.layers == 2 and a.reformats.average_ms == pytest.approx(0.15)
    assert a.reformats.converting == 1 and a.reformats.converting_ms == pytest.approx(0.10)
    assert a.reformats.share_pct == pytest.approx(15.0)
    mix = {s.key: (round(s.average_ms, 6), s.layers) for s in a.precision_mix}
    assert mix == {"INT8": (0.85, 3), "FP32": (0.15, 2)}
    assert a.engine_precision == "INT8"
    assert a.graph is not None and len(a.graph.nodes) == 5
    edges = {(e.tensor, e.src, e.dst) for e in a.graph.edges}
    assert ("t0", -1, 0) in edges and ("t1", 0, 1) in edges and ("t5", 4, -1) in edges
    j = tensorrt_json(a)
    assert j["layers"][0]["decoded"]["kind"] == "plain" and j["reformats"]["layers"] == 2
    assert j["graph"]["edges"][0] == {
        "tensor": "t0",
        "from": -1,
        "to": 0,
        "dtype": "FP32",
        "dims": [1, 8],
    }


def test_percentiles_like_trtexec() -> None:
    v = np.arange(1, 101, dtype=np.float64)
    assert trtexec_percentile(v, 90) == 90.0 and trtexec_percentile(v, 99) == 99.0
    assert trtexec_percentile(np.array([5.0]), 99) == 5.0
    s = stat_of(np.array([1.0, 2.0, 3.0, 4.0]))
    assert (
        s is not None
        and s.median == 2.5
        and s.mean == 2.5
        and s.cv_pct == pytest.approx(44.72, 0.01)
    )
    # values whose squares overflow: no coefficient rather than inf (and no numpy warning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        huge = stat_of(np.array([1e200, 3e200]))
    assert huge is not None and huge.cv_pct is None and huge.mean == 2e200


# ---- rules: one firing and one silent case each ----------------------------------------


def _fires(rule: str, a_run: object) -> bool:
    ctx = TrtContext(analyse_tensorrt(a_run))  # type: ignore[arg-type]
    return TRT_RULES[rule](ctx) is not None


def test_reformat_rule() -> None:
    assert _fires("trt-reformat", run(BASE, options=INT8))
    quiet = [r for r in BASE if r[2] != "Reformat"]
    assert not _fires("trt-reformat", run(quiet, options=INT8))
    f = TRT_RULES["trt-reformat"](
        TrtContext(analyse_tensorrt(run(BASE, options=INT8, summary={"GPU Compute Time": 0.5})))
    )
    assert f is not None and f.saving_us == pytest.approx(75.0)  # 0.15 ms x (0.5 / 1.0)


def test_precision_rule() -> None:
    fp32_heavy = [*BASE, ("MatMul_40", 0.50, "CaskGemm", "FP32", "FP32")]
    f = TRT_RULES["trt-precision"](TrtContext(analyse_tensorrt(run(fp32_heavy, options=INT8))))
    assert f is not None and f.id == "trt-precision" and "MatMul_40" in " ".join(f.evidence)
    assert f.saving_us == pytest.approx(275.0)  # (0.5 + 0.05) / 2 ms
    assert not _fires("trt-precision", run(BASE, options=INT8))  # FP32 only 5 %
    assert not _fires("trt-precision", run(fp32_heavy, options=(("Precision", "FP32"),)))


def test_enqueue_rule() -> None:
    bound = run(BASE, summary={"GPU Compute Time": 0.5, "Enqueue Time": 0.8})
    f = TRT_RULES["trt-enqueue-bound"](TrtContext(analyse_tensorrt(bound)))
    assert f is not None and f.saving_us == pytest.approx(300.0) and "useCudaGraph" in f.fix
    assert not _fires(
        "trt-enqueue-bound", run(BASE, summary={"GPU Compute Time": 0.5, "Enqueue Time": 0.1})
    )


def test_transfer_rule() -> None:
    heavy = run(BASE, summary={"GPU Compute Time": 1.0, "H2D Latency": 0.6, "D2H Latency": 0.2})
    f = TRT_RULES["trt-transfer-bound"](TrtContext(analyse_tensorrt(heavy)))
    assert f is not None and f.saving_us == pytest.approx(800.0)
    assert not _fires(
        "trt-transfer-bound", run(BASE, summary={"GPU Compute Time": 1.0, "H2D Latency": 0.1})
    )


def test_unstable_rule() -> None:
    assert _fires("trt-unstable-timings", run(BASE, summary={"GPU Compute Time": 1.0, "cv": 6.0}))
    assert not _fires(
        "trt-unstable-timings", run(BASE, summary={"GPU Compute Time": 1.0, "cv": 1.0})
    )


def test_small_batch_rule() -> None:
    tiny = [(f"Conv_{i}", 0.004, "CaskConvolution", "FP16", "FP16") for i in range(10)]
    f = TRT_RULES["trt-small-batch"](
        TrtContext(analyse_tensorrt(run(tiny, options=(("Batch", "1"),))))
    )
    assert f is not None and f.saving_us == pytest.approx(20.0)
    assert not _fires("trt-small-batch", run(tiny, options=(("Batch", "32"),)))
    assert not _fires("trt-small-batch", run(BASE, options=(("Batch", "1"),)))


def test_advisor_ranks_and_survives_a_broken_rule() -> None:
    a = analyse_tensorrt(
        run(BASE, options=INT8, summary={"GPU Compute Time": 1.0, "Enqueue Time": 2.0})
    )

    def boom(ctx: TrtContext) -> None:
        raise RuntimeError("x")

    out = advise_tensorrt(a, {**TRT_RULES, "boom": boom})  # type: ignore[dict-item]
    ids = [f.id for f in out]
    assert ids[0] == "trt-enqueue-bound" and ids[-1] == "advisor-error" and "trt-reformat" in ids
    assert TrtReport(a, 5, out).to_json()["findings"][0]["id"] == "trt-enqueue-bound"


# ---- comparison ------------------------------------------------------------------------


def test_compare_engines() -> None:
    a_rows = [
        ("Conv_1", 0.4, "CaskConvolution", "FP32", "FP32"),
        ("Relu_2", 0.1, "PointWiseV2", "FP32", "FP32"),
        ("Pool_3", 0.2, "CaskPooling", "FP32", "FP32"),
    ]
    b_rows = [
        ("Conv_1 + Relu_2", 0.2, "CaskConvolution", "FP16", "FP16"),
        ("Pool_3", 0.1, "CaskPooling", "FP16", "FP16"),
        ("copy", 0.05, "Reformat", "FP16", "FP32"),
    ]
    a = analyse_tensorrt(run(a_rows, name="fp32", summary={"GPU Compute Time": 0.7}))
    b = analyse_tensorrt(run(b_rows, name="fp16", summary={"GPU Compute Time": 0.35}))
    c = compare_engines(a, b)
    assert c.speedup == pytest.approx(2.0)
    assert [(d.name, d.delta_ms) for d in c.matched] == [("Pool_3", pytest.approx(-0.1))]
    assert c.matched[0].a_precision == "FP32" and c.matched[0].b_precision == "FP16"
    assert [d.name for d in c.only_a] == ["Conv_1", "Relu_2"] and [d.name for d in c.only_b] == [
        "Conv_1 + Relu_2",
        "copy",
    ]
    assert len(c.fusions) == 1
    f = c.fusions[0]
    assert f.side == "b" and f.layer == "Conv_1 + Relu_2" and f.others == ("Conv_1", "Relu_2")
    assert f.others_ms == pytest.approx(0.5)
    j = c.to_json()
    assert j["a"]["engine"] == "fp32" and j["fusions"][0]["split_layers"] == ["Conv_1", "Relu_2"]
    mix = {s["key"]: (s["a_pct"], s["b_pct"]) for s in j["precision_mix"]}
    assert mix["FP32"] == (100.0, 0.0) and mix["FP16"] == (0.0, 100.0)  # input precision
    assert layer_nodes("w + Conv_1 + PWN(PWN(a + b), c) [profile 2]") == (
        "w",
        "Conv_1",
        "a",
        "b",
        "c",
    )
    from rich.console import Console

    con = Console(record=True, width=160)
    render_engine_diff(c, con)
    out = con.export_text()
    assert "B is 2.00x the speed of A" in out and "B fuses 2 layers of A" in out


# ---- kernels -> layers (synthetic nsys export; no real TensorRT nsys export available) ----


def test_kernels_to_layers(tmp_path: Path) -> None:
    db = tmp_path / "trt.sqlite"
    nsys_sqlite(
        db,
        [
            ("Conv_1 + Relu_2", [("sm80_xmma_fprop_a", 4000), ("generatedNativePointwise", 1000)]),
            ("Pool_3", [("pool_kernel", 2000)]),
        ],
        iterations=3,
        outside=2,
    )
    tr = read_layer_kernels(str(db))
    m = layer_gpu_times(tr)
    assert m.per_layer_ms == {
        "Conv_1 + Relu_2": pytest.approx(0.005),
        "Pool_3": pytest.approx(0.002),
    }
    assert m.occurrences["Conv_1 + Relu_2"] == 3
    assert m.kernels["Conv_1 + Relu_2"][0] == ("sm80_xmma_fprop_a", pytest.approx(0.004), 3)
    assert (
        m.mapped_kernels == 9 and m.unmapped_kernels == 2 and m.unmapped_ms == pytest.approx(0.002)
    )
    a = analyse_tensorrt(
        run(
            [
                ("Conv_1 + Relu_2", 0.006, "CaskConvolution", "FP16", "FP16"),
                ("Pool_3", 0.003, "CaskPooling", "FP16", "FP16"),
            ]
        )
    )
    a2 = with_gpu_times(a, m.per_layer_ms)
    assert [r.gpu_ms for r in a2.layers] == [pytest.approx(0.005), pytest.approx(0.002)]


def test_detailed_nvtx_texts_name_their_layer(tmp_path: Path) -> None:
    """--profilingVerbosity=detailed: NVTX texts are the layer's JSON; its Name is the layer."""
    detailed = '{"Name":"Conv_1 + Relu_2","LayerType":"CaskConvolution","TacticValue":"0x1"}'
    broken = '{"Name":"say "hi"","LayerType":"Reformat","Inputs":[]}'  # quotes not escaped
    assert layer_of_range(detailed) == "Conv_1 + Relu_2"
    assert layer_of_range(broken) == 'say "hi"'
    assert layer_of_range("Pool_3") == "Pool_3" and layer_of_range("{not json") == "{not json"
    db = tmp_path / "detailed.sqlite"
    nsys_sqlite(db, [(detailed, [("sm80_xmma_fprop_a", 4000)]), (broken, [("copy", 500)])],
                iterations=2)
    m = layer_gpu_times(read_layer_kernels(str(db)))
    assert m.per_layer_ms == {"Conv_1 + Relu_2": pytest.approx(0.004),
                              'say "hi"': pytest.approx(0.0005)}
    assert m.occurrences["Conv_1 + Relu_2"] == m.occurrences['say "hi"'] == 2


def test_nsys_bad_inputs(tmp_path: Path) -> None:
    bad = tmp_path / "x.sqlite"
    bad.write_bytes(b"not sqlite at all" * 10)
    with pytest.raises(TraceFormatError):
        read_layer_kernels(str(bad))
    import sqlite3

    empty = tmp_path / "e.sqlite"
    sqlite3.connect(empty).execute(
        "CREATE TABLE StringIds (id INTEGER, value TEXT)"
    ).connection.commit()
    with pytest.raises(TraceFormatError, match="lacks NVTX_EVENTS"):
        read_layer_kernels(str(empty))


def test_report_json_no_profile() -> None:
    r = run(BASE)
    r2 = dataclasses.replace(r, profile=None)
    a = analyse_tensorrt(r2)
    assert a.layer_total_ms == 0 and all(x.average_ms is None for x in a.layers)
    assert "no per-layer profile" in a.notes[0]
    assert advise_tensorrt(a) == []


def test_diff_renderer_escapes_names() -> None:
    from rich.console import Console

    hostile = "[bold red]boom[/] <b>"
    a = analyse_tensorrt(run([(hostile, 0.2, "Reformat", "FP32", "FP16")], name="a"))
    b = analyse_tensorrt(run([(hostile, 0.1, "Reformat", "FP32", "FP16")], name="b"))
    con = Console(record=True, width=200)
    render_engine_diff(compare_engines(a, b), con)
    assert "[bold red]boom[/] <b>" in con.export_text()


def test_onnx_nodes_pair_renamed_myelin_layers() -> None:
    from stepscope.analysis.tensorrt.names import onnx_nodes
    from stepscope.model.tensorrt import EngineLayer

    assert onnx_nodes("[ONNX Layer: /a/MatMul]\x1f[ONNX Layer: /a/Softmax]") == (
        "/a/MatMul",
        "/a/Softmax",
    )

    def with_meta(r: object, metas: list[str]) -> object:
        g = r.graph  # type: ignore[attr-defined]
        layers = tuple(
            dataclasses.replace(lay, metadata=m) for lay, m in zip(g.layers, metas, strict=True)
        )
        return dataclasses.replace(r, graph=dataclasses.replace(g, layers=layers))

    ra = run(
        [
            ("__myl_A_myl0_1", 0.4, "kgen", "FP16", "FP16"),
            ("gemm_myl0_2", 0.2, "gemm", "FP16", "FP16"),
        ]
    )
    rb = run(
        [
            ("__myl_A_myl4_9", 0.1, "kgen", "FP16", "FP16"),
            ("fused_myl4_3", 0.3, "gemm", "FP16", "FP16"),
        ]
    )
    a = analyse_tensorrt(with_meta(ra, ["[ONNX Layer: n1]", "[ONNX Layer: n2]"]))  # type: ignore[arg-type]
    b = analyse_tensorrt(
        with_meta(rb, ["[ONNX Layer: n1]", "[ONNX Layer: n2]\x1f[ONNX Layer: n3]"])  # type: ignore[arg-type]
    )
    assert a.layers[0].onnx_nodes == ("n1",) and isinstance(EngineLayer, type)
    c = compare_engines(a, b)
    assert [d.name for d in c.matched] == ["__myl_A_myl0_1 ⇄ __myl_A_myl4_9"]
    assert c.matched[0].delta_ms == pytest.approx(-0.3)
    assert [d.name for d in c.only_a] == ["gemm_myl0_2"] and [d.name for d in c.only_b] == [
        "fused_myl4_3"
    ]


def test_layer_precision_rules() -> None:
    from tests.trt_builders import tensor

    from stepscope.model.tensorrt import EngineGraph, EngineLayer

    r = run([("a", 1.0, "X", "FP32", "FP32")] * 3)
    layers = (
        EngineLayer(
            "{ForeignNode[a...b]}", "Myelin", (tensor("x", "FP32"),), (tensor("y", "FP16"),)
        ),
        EngineLayer(
            "Gather_1",
            "Gather",
            (tensor("i", "INT32"), tensor("d", "FP16")),
            (tensor("o", "FP16"),),
        ),
        EngineLayer("shape", "Shuffle", (tensor("i", "INT32"),), (tensor("o", "INT64"),)),
    )
    from stepscope.model.tensorrt import LayerProfile, LayerTime

    prof = LayerProfile("p", 1, tuple(LayerTime(x.name, 1, 1, 1, 33.3) for x in layers))
    a = analyse_tensorrt(
        dataclasses.replace(r, profile=prof, graph=EngineGraph("g", layers, (), True))
    )
    assert [x.precision for x in a.layers] == ["FP16", "FP16", "INT32"]


def test_iteration_series_buckets() -> None:
    from tests.trt_builders import times_text

    from stepscope.analysis.tensorrt.engine import iteration_series
    from stepscope.formats.tensorrt.exports import read_times

    t = read_times(times_text([1.0, 3.0, 2.0, 2.0, 5.0], enq=0.5).encode(), "t")
    s = iteration_series(t, max_points=2)
    assert s.bucket == 3 and s.first == (0, 3) and s.iterations == 5
    assert s.compute_mean_ms == pytest.approx((2.0, 3.5)) and s.compute_max_ms == (3.0, 5.0)
    assert s.enqueue_mean_ms == pytest.approx((0.5, 0.5))
    full = iteration_series(t)
    assert full.bucket == 1 and full.compute_mean_ms == (1.0, 3.0, 2.0, 2.0, 5.0)


def test_identical_engines_with_reformats_have_no_fusion_differences() -> None:
    rows = [
        ("Reformatting CopyNode for Input Tensor 0 to Conv_1 + Relu_2", 0.05, "Reformat",
         "FP32", "FP16"),
        ("Conv_1 + Relu_2", 0.3, "CaskConvolution", "FP16", "FP16"),
    ]
    a = analyse_tensorrt(run(rows, name="a"))
    b = analyse_tensorrt(run(rows, name="b"))
    c = compare_engines(a, b)
    assert c.fusions == () and not c.only_a and not c.only_b
    assert [d.delta_ms for d in c.matched] == [0.0, 0.0]


def test_times_without_compute_ends_have_no_span() -> None:
    # trtexec 7.x and cut files write no endComputeMs: no throughput, and no all-NaN warning
    text = '[{ "startEnqMs" : 1, "endEnqMs" : 1.01, "computeMs" : 0.5, "latencyMs" : 0.5 }]'
    times = read_times(text.encode(), "t.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = summary_from_times(times)
    assert summary.throughput_qps is None and summary.walltime_s is None
    assert summary.gpu_compute_total_s == 0.0005
