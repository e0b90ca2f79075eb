"""``stepscope report`` on trtexec outputs: text and JSON, hostile names, bad input, --nsys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from tests.trt_builders import layer_info_text, log_text, nsys_sqlite, profile_text, times_text

from stepscope.cli.main import main
from stepscope.formats.tensorrt.load import find_files, is_trtexec_output, load_trt_run
from stepscope.report.tensorrt import build_trt_report
from stepscope.report.text.tensorrt import render_trt_text

TACTIC = "ampere_h16816cudnn_128x128_ldg8_relu_exp_stages_64x3_large_nhwc_tn_v1"
HOSTILE = '[bold red]x[/] <script>alert(1)</script> & "q"'


def _engine(tmp: Path, name: str = "m.engine") -> Path:
    (tmp / f"{name}.profile.json").write_text(
        profile_text([(HOSTILE, 0.5), ("Conv_1 + Relu_2", 1.5)])
    )
    (tmp / f"{name}.graph.json").write_text(
        layer_info_text(
            [
                {
                    "name": HOSTILE,
                    "type": "Reformat",
                    "inputs": [("in", "Row major linear FP32")],
                    "outputs": [("a", "Half")],
                },
                {
                    "name": "Conv_1 + Relu_2",
                    "inputs": [("a", "Half")],
                    "outputs": [("out", "Half")],
                    "tactic": TACTIC,
                },
            ]
        )
    )
    (tmp / f"{name}.timing.json").write_text(times_text([2.0] * 50 + [2.2] * 50, enq=0.1))
    (tmp / "run.log").write_text(log_text(gpu_median=2.0, enq_median=0.1))
    return tmp / f"{name}.profile.json"


def test_sniff_and_group(tmp_path: Path) -> None:
    prof = _engine(tmp_path)
    assert is_trtexec_output(str(prof)) and is_trtexec_output(str(tmp_path))
    name, files = find_files(str(prof))
    assert name == "m.engine" and set(files) == {"profile", "layer_info", "times"}
    name, files = find_files(str(tmp_path))
    assert set(files) == {"profile", "layer_info", "times", "log"}
    (tmp_path / "x.json").write_text('{"traceEvents": []}')
    assert not is_trtexec_output(str(tmp_path / "x.json"))


def test_text_escapes_hostile_names(tmp_path: Path) -> None:
    _engine(tmp_path)
    rep = build_trt_report(load_trt_run(str(tmp_path)), top=5)
    con = Console(record=True, width=200)
    render_trt_text(rep, con)
    out = con.export_text()
    assert "[bold red]x[/] <script>" in out  # printed literally, never interpreted as markup
    assert "cuDNN-style convolution · FP16 · arch ampere · CTA tile 128x128" in out
    assert "Performance summary (trtexec log): throughput 987.5 qps" in out
    assert "salvaged" not in out and "invalid JSON" in out  # the unescaped quotes were repaired


def test_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _engine(tmp_path)
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"schema", "source", "devices", "findings", "tensorrt"}
    t = data["tensorrt"]
    assert t["layers"][0]["name"] == HOSTILE and t["layers"][0]["reformat"] is True
    assert t["layers"][1]["kernel"]["precision"] == "FP16" and t["trt_version"] == "10.3.0"
    assert (
        t["summary"]["source"] == "log"
        and t["summary"]["metrics"]["GPU Compute Time"]["median_ms"] == 2.0
    )
    assert t["timing_cv_pct"] == pytest.approx(4.762, abs=0.001)  # std 0.1 / mean 2.1
    assert data["source"]["partial"] is True  # salvaged files are labelled
    assert {f["id"] for f in data["findings"]} == {"trt-reformat", "trt-unstable-timings"}


@pytest.mark.parametrize(
    "content", ['[\n  { "count" : 3 }\n, { "name" : "a', "[{", '{"Layers": 5}']
)
def test_bad_files_one_line(
    tmp_path: Path,
    content: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("STEPSCOPE_DEBUG")
    f = tmp_path / "bad.profile.json"
    f.write_text(content)
    code = main(["report", str(f)])
    err = capsys.readouterr().err
    if code != 0:
        assert code == 2 and err.count("\n") == 1 and "bad.profile.json" in err


def test_nsys_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _engine(tmp_path)
    db = tmp_path / "run.sqlite"
    nsys_sqlite(db, [("Conv_1 + Relu_2", [("ampere_h16816cudnn_x", 1_200_000)])], iterations=4)
    assert (
        main(
            [
                "report",
                str(tmp_path / "m.engine.profile.json"),
                "--nsys",
                str(db),
                "--format",
                "json",
            ]
        )
        == 0
    )
    t = json.loads(capsys.readouterr().out)["tensorrt"]
    by = {r["name"]: r["gpu_ms"] for r in t["layers"]}
    assert by["Conv_1 + Relu_2"] == pytest.approx(1.2) and by[HOSTILE] is None
    assert t["kernels_source"] == str(db)
    assert t["kernel_mapping"] == {
        "mapped_kernels": 4,
        "unmapped_kernels": 0,
        "unmapped_ms": 0.0,
        "layers_with_kernels": 1,
    }
    conv = next(r for r in t["layers"] if r["name"] == "Conv_1 + Relu_2")
    assert conv["gpu_kernels"][0]["name"] == "ampere_h16816cudnn_x"
    assert conv["gpu_kernels"][0]["launches"] == 4 and conv["gpu_kernels"][0]["ms"] == 1.2


def test_load_trace_points_to_report(tmp_path: Path) -> None:
    import stepscope
    from stepscope.errors import TraceFormatError

    _engine(tmp_path)
    with pytest.raises(TraceFormatError, match="TensorRT trtexec output"):
        stepscope.load(str(tmp_path / "m.engine.graph.json"), cache=False)


FUZZ = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@FUZZ
@given(
    st.sampled_from(["profile", "graph", "timing"]), st.integers(0, 4000), st.binary(max_size=20)
)
def test_fuzz_report_on_damaged_engine(
    tmp_path_factory: pytest.TempPathFactory, which: str, cut: int, junk: bytes
) -> None:
    """Truncated or corrupted exports: the report runs (exit 0) or fails with one line (2)."""
    d = tmp_path_factory.mktemp("fz")
    _engine(d)
    f = d / f"m.engine.{which}.json"
    f.write_bytes(f.read_bytes()[:cut] + junk)
    try:
        code = main(["report", str(d), "--format", "json"])
    except SystemExit as exc:  # argparse never fires here; keep the contract explicit
        code = int(exc.code or 0)
    assert code in (0, 2)


def test_nsys_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "250")  # no wrapping: the assertions read whole lines
    _engine(tmp_path)
    db = tmp_path / "run.sqlite"
    nsys_sqlite(
        db, [("Conv_1 + Relu_2", [("ampere_h16816cudnn_x", 1_200_000)])], iterations=4, outside=1
    )
    assert main(["report", str(tmp_path), "--nsys", str(db), "--top", "5"]) == 0
    out = capsys.readouterr().out
    assert "(nsys)" in out and "1 outside any layer range" in out
    row = next(line for line in out.splitlines() if line.startswith("Conv_1 + Relu_2"))
    assert row.split()[-1] == "1.20"  # GPU (nsys) in ms, the unit in the header
    assert "nsys: ampere_h16816cudnn_x 1.20 ms ×4" in out


def test_tensorrt_diff_entry_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from stepscope.cli.pipelines.engine_diff import run_tensorrt_diff

    a = tmp_path / "a"
    b = tmp_path / "b"
    a.mkdir()
    b.mkdir()
    _engine(a)
    _engine(b)
    (b / "m.engine.profile.json").write_text(
        profile_text([(HOSTILE, 0.25), ("Conv_1 + Relu_2", 1.5)])
    )
    assert run_tensorrt_diff(str(a), str(b), fmt="json") == 0
    doc = json.loads(capsys.readouterr().out)
    d = doc["tensorrt_diff"]
    assert d["matched_layers"][0]["name"] == HOSTILE and d["matched_layers"][0]["delta_ms"] == -0.25
    assert run_tensorrt_diff(str(a), str(b)) == 0
    out = capsys.readouterr().out
    assert "Matched layers" in out
    # two engines of one name are told apart by the shortest folder end that differs
    assert (d["a"]["engine"], d["b"]["engine"]) == ("a/m.engine", "b/m.engine")
    assert "\nA: a/m.engine\nB: b/m.engine\n" in out


def test_engine_labels_use_the_shortest_distinguishing_parents(tmp_path: Path) -> None:
    from stepscope.cli.pipelines.engine_diff import distinct_labels

    x, y = tmp_path / "run1" / "fp16", tmp_path / "run2" / "fp16"
    for d in (x, y):
        d.mkdir(parents=True)
        (d / "m.engine.profile.json").write_text("{}")
    assert distinct_labels(str(x), str(y), "m.engine") == ("run1/fp16/m.engine",
                                                           "run2/fp16/m.engine")
    assert distinct_labels(str(x / "m.engine.profile.json"), str(y / "m.engine.profile.json"),
                           "m.engine") == ("run1/fp16/m.engine", "run2/fp16/m.engine")


def test_unsupported_format_is_a_usage_error(tmp_path: Path) -> None:
    import argparse

    from stepscope.cli.pipelines.engine import run_tensorrt
    from stepscope.errors import UsageError

    _engine(tmp_path)
    args = argparse.Namespace(path=str(tmp_path), format="html", top=5, nsys=None)
    with pytest.raises(UsageError, match="not available for TensorRT"):
        run_tensorrt(args)


def test_salvage_of_a_layer_info_cut_after_a_key() -> None:
    """A damaged --exportLayerInfo whose "Bindings" line lost its colon (found by the fuzz
    test above: IndexError, an internal error) salvages the names it still holds."""
    from stepscope.formats.tensorrt.exports import _salvage_names

    text = '{"Layers": ["conv1"\n,"relu1"\n],\n"Bindings"'  # trtexec writes one name a line
    assert _salvage_names(text) == (["conv1", "relu1"], [])


def test_a_log_without_a_summary_is_not_called_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = log_text().splitlines()
    start = next(i for i, line in enumerate(lines) if "=== Performance summary ===" in line)
    end = next(i for i, line in enumerate(lines) if "Total GPU Compute Time" in line)
    (tmp_path / "m.engine.log").write_text("\n".join(lines[:start] + lines[end + 1:]) + "\n")
    assert main(["report", str(tmp_path / "m.engine.log")]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("Performance summary: not available: the trtexec log has no '=== Performance "
            "summary ===' section; no trex metadata or --exportTimes either") in out
    assert main(["report", str(tmp_path / "m.engine.log"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["tensorrt"]["log"].endswith("m.engine.log")
    # without any log: it says what is missing
    (tmp_path / "m.engine.log").unlink()
    (tmp_path / "m.engine.profile.json").write_text(profile_text([("Conv_1", 1.0)]))
    assert main(["report", str(tmp_path / "m.engine.profile.json")]) == 0
    assert ("not available: no trtexec log, trex metadata or --exportTimes among the files"
            in " ".join(capsys.readouterr().out.split()))
