"""Real trtexec outputs (../shared/traces/tensorrt): every file reports; pinned figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import SHARED_TRACES, shared_trace

from stepscope.advice.tensorrt import advise_tensorrt
from stepscope.analysis.tensorrt.engine import analyse_tensorrt, summary_from_times
from stepscope.cli.main import main
from stepscope.formats.tensorrt.load import load_trt_run

ROOT = SHARED_TRACES / "tensorrt"
FILES = sorted(p for p in ROOT.rglob("*") if p.is_file() and p.suffix in (".json", ".out"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_file_reports(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["schema"] == "stepscope.report/1" and data["source"]["format"] == "trtexec"
    t = data["tensorrt"]
    assert t["layers"], path
    assert main(["report", str(path), "--top", "5"]) == 0
    assert "TensorRT engine" in capsys.readouterr().out


def _profiles() -> list[Path]:
    return sorted(ROOT.rglob("*profile.json"))


@pytest.mark.parametrize("path", _profiles(), ids=lambda p: str(p.relative_to(ROOT)))
def test_layer_totals_equal_profile_sums(path: Path) -> None:
    doc = json.loads(path.read_text())
    a = analyse_tensorrt(load_trt_run(str(path)))
    assert a.layer_total_ms == pytest.approx(sum(x["averageMs"] for x in doc[1:]), rel=1e-12)
    assert sum(r.time_ms or 0.0 for r in a.layers) == pytest.approx(
        sum(x["timeMs"] for x in doc[1:]), rel=1e-12
    )
    assert len(a.layers) == len(doc) - 1 and a.profiled_iterations == doc[0]["count"]
    assert sum(r.share_pct or 0.0 for r in a.layers) == pytest.approx(100.0)


def test_pinned_mobilenet_qat() -> None:
    run = load_trt_run(
        str(shared_trace("tensorrt/trex/tests/inputs/mobilenet.qat.onnx.engine.graph.json"))
    )
    assert len(run.files) == 5 and run.times is not None and len(run.times) == 8945
    a = analyse_tensorrt(run)
    assert a.layer_total_ms == pytest.approx(0.470389, abs=1e-6)
    assert a.engine_precision == "INT8" and a.batch == 1
    assert a.reformats.layers == 19 and a.reformats.converting == 17
    assert a.reformats.share_pct == pytest.approx(17.55, abs=0.01)
    mix = {s.key: round(s.share_pct, 2) for s in a.precision_mix}
    assert mix == {"INT8": 81.49, "FP16": 14.65, "FP32": 3.86}
    assert a.summary is not None and a.summary.source == "trex-metadata"
    assert a.summary.get("GPU Compute Time").median == pytest.approx(0.351196)  # type: ignore[union-attr]
    assert a.timing_cv_pct == pytest.approx(6.496, abs=0.001)
    recomputed = summary_from_times(run.times).get("GPU Compute Time")
    assert recomputed is not None and recomputed.median == pytest.approx(0.351196, abs=0.002)
    assert a.graph is not None and len(a.graph.nodes) == 73
    ids = [f.id for f in advise_tensorrt(a)]
    assert ids == ["trt-small-batch", "trt-reformat", "trt-unstable-timings"]
    from stepscope.report.tensorrt import device_json

    dev = device_json(run.device)
    assert dev["name"] == "NVIDIA TITAN RTX" and dev["num_sms"] == 72
    assert dev["compute_capability"] == "7.5" and dev["total_memory_bytes"] == 24217 * 2**20


def test_pinned_trtexec_85_log_folder() -> None:
    run = load_trt_run(str(shared_trace("tensorrt/trex-notebooks-src-2023")))
    assert run.log is not None and run.log.version == "8.5.2" and run.log.passed is True
    assert run.log.profile is not None and run.log.profile.count == 11
    assert len(run.log.profile.layers) == 77  # zero-time layers are not printed
    assert sum(x.average_ms for x in run.log.profile.layers) == pytest.approx(403.8158, abs=0.01)
    assert run.graph is not None and len(run.graph.layers) == 86  # log's layer dump
    # kernel names recovered from the builder's "Set Tactic Name" lines
    assert sum(1 for lay in run.graph.layers if lay.tactic_name) == 44
    assert run.graph.layers[11].tactic_name == "ampere_fp32_icudnn_int8x4_128x64_relu_medium_nn_v1"
    a = analyse_tensorrt(run)
    assert a.layer_total_ms == pytest.approx(403.815802, abs=1e-6)
    assert a.engine_precision == "INT8"
    assert a.reformats.layers == 18 and a.reformats.converting == 12
    myelin = [r for r in a.layers if r.decoded.kind == "myelin-region"]
    assert [r.average_ms for r in myelin] == [pytest.approx(113.189), pytest.approx(0.245553)]
    assert myelin[0].precision == "FP32" and myelin[0].layer_type == "Myelin"
    findings = advise_tensorrt(a)
    assert [f.id for f in findings][:2] == ["trt-precision", "trt-reformat"]
    assert findings[0].fix.startswith("The engine was built without FP16: add --fp16")
    assert findings[0].saving_us == pytest.approx(72_187, rel=1e-3)  # half of 144.374 ms


def test_compare_real_engines() -> None:
    from stepscope.analysis.tensorrt.diff import compare_engines

    base = "tensorrt/trex/examples/pytorch/resnet/A100/"
    a = analyse_tensorrt(load_trt_run(str(shared_trace(base + "qat-residual"))))
    b = analyse_tensorrt(load_trt_run(str(shared_trace(base + "qat-residual-qgap"))))
    c = compare_engines(a, b)
    assert c.a_layers == 26 and c.b_layers == 24
    assert c.speedup == pytest.approx(0.545776 / 0.499756, rel=1e-3)
    assert len(c.matched) > 10


def test_folder_with_two_engines_is_one_line_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("STEPSCOPE_DEBUG")
    assert main(["report", str(shared_trace("tensorrt/trex/tests/inputs"))]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "2 engines" in err


def test_kernel_mapping_on_a_real_nsys_export() -> None:
    """No TensorRT nsys export exists in ../shared/traces; the same NVTX projection on a real
    nsys 2024/2025 export (nvFuser on an H200) checks the reader against the real schema."""
    from stepscope.analysis.tensorrt.kernels import layer_gpu_times
    from stepscope.formats.tensorrt.nsys import read_layer_kernels

    path = shared_trace("nsys/nvidia-fuser/a049892_report1.sqlite")
    tr = read_layer_kernels(str(path))
    assert len(tr.range_start) == 13513 and len(tr.kernel_start) == 18
    m = layer_gpu_times(tr)
    assert (m.mapped_kernels, m.unmapped_kernels) == (8, 10)
    launch = "ExecutorRunFusion::cuLaunchKernel"
    assert m.occurrences[launch] == 6
    assert m.kernels[launch][0][0] == "nvfuser_inner_persistent_f1_c1_r0_g2"
    assert m.per_layer_ms[launch] == pytest.approx(0.521925, abs=1e-6)
