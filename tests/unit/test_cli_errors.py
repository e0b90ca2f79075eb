"""Every bad command line or output path: one line on stderr naming the problem, exit 2,
and nothing lost (no output written before the error, no half-written file)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.cli.main import main


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 10, 30)
        b.launch(op, "cudaLaunchKernel", 20, 5, kernel="sgemm", k_ts=30, k_dur=50)
    return b.write(tmp_path)


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(("argv", "words"), [
    (["report", "x.json", "--top", "-1"], ["stepscope report: error:", "--top", "-1"]),
    (["diff", "a", "b", "--top", "0"], ["stepscope diff: error:", "--top"]),
    (["view", "x", "--port", "abc"], ["stepscope view: error:", "--port", "'abc'"]),
    (["report"], ["stepscope report: error:", "path"]),
    (["report", "x.json", "--format", "xml"], ["--format", "'xml'"]),
    (["nosuchcommand"], ["stepscope: error:", "'nosuchcommand'"]),
    (["--no-such-option"], ["stepscope: error:", "--no-such-option"]),
    # --workers -3 with dask hung for ever; nan/inf/negative bandwidths were taken silently
    (["report", "a", "b", "--executor", "dask", "--workers", "-3"], ["--workers", "-3"]),
    (["report", "a", "b", "--workers", "0"], ["--workers", "1 or more"]),
    (["report", "a", "b", "--link-gbps", "-5"], ["--link-gbps", "positive number, got -5"]),
    (["report", "a", "b", "--link-gbps", "nan"], ["--link-gbps", "positive number, got nan"]),
    (["report", "a", "b", "--link-gbps", "inf"], ["--link-gbps", "positive number, got inf"]),
    (["report", "a", "b", "--link-gbps", "fast"], ["--link-gbps", "expected a number"]),
])
def test_bad_options_are_one_line_exit_2(argv: list[str], words: list[str],
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2  # returned, not a SystemExit
    line = _one_line(capsys)
    assert "usage:" not in line
    for w in words:
        assert w in line, line


@pytest.mark.parametrize("value", ["inf", "nan", "0", "-1"])
def test_peaks_must_be_finite_and_positive(value: str, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path)
    for flag in ("--peak-tflops", "--peak-gbps"):
        assert main(["report", str(trace), flag, value]) == 2
        assert f"{flag} must be a positive number" in _one_line(capsys)


# ---------------------------------------------------------------- output paths


@pytest.fixture()
def bundle(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stand-in front end, so --html runs without the vite build."""
    dist = tmp_path / "dist"
    (dist / "assets").mkdir(parents=True)
    (dist / "index.html").write_text("<!doctype html>")
    (dist / "assets" / "app.js").write_text("console.log(1)")
    monkeypatch.setenv("STEPSCOPE_FRONTEND_DIST", str(dist))
    return dist


def _no_analysis(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the trace was read before the output path was checked")

    monkeypatch.setattr("stepscope.cli.report.load_trace", refuse)
    monkeypatch.setattr("stepscope.report.diff_load.trace_summary_and_report", refuse)


@pytest.mark.usefixtures("bundle")
@pytest.mark.parametrize("where", ["below_a_file", "a_directory", "empty"])
def test_bad_html_path_fails_before_the_analysis(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trace = _trace(tmp_path)
    (tmp_path / "file").write_text("x")
    out, reason = {"below_a_file": (str(tmp_path / "file" / "r.html"), "not a directory"),
                   "a_directory": (str(tmp_path), "is a directory"),
                   "empty": ("", "empty path")}[where]
    _no_analysis(monkeypatch)
    for argv in (["report", str(trace), "--html", out],
                 ["diff", str(trace), str(trace), "--html", out]):
        assert main(argv) == 2
        line = _one_line(capsys)
        assert "cannot write the HTML report" in line and reason in line, line
        assert out in line


def test_html_without_the_front_end_fails_before_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("stepscope.report.bundle.find_bundle", lambda: None)
    _no_analysis(monkeypatch)
    assert main(["report", str(_trace(tmp_path)), "--html", str(tmp_path / "r.html")]) == 2
    assert "front end is not built" in _one_line(capsys)


@pytest.mark.usefixtures("bundle")
def test_bad_html_path_writes_no_baseline(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace(tmp_path)
    (tmp_path / "file").write_text("x")
    baseline = tmp_path / "baseline.json"
    assert main(["diff", str(trace), str(trace), "--save-baseline", str(baseline),
                 "--html", str(tmp_path / "file" / "d.html")]) == 2
    assert "cannot write the HTML report" in _one_line(capsys)
    assert not baseline.exists()  # nothing written before the error


def test_bad_baseline_path_fails_before_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path)
    _no_analysis(monkeypatch)
    assert main(["diff", str(trace), str(trace), "--save-baseline", str(tmp_path)]) == 2
    line = _one_line(capsys)
    assert line == f"stepscope: error: --save-baseline {tmp_path}: cannot write (is a directory)"


def test_baseline_from_a_saved_report_is_refused_before_the_analysis(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    trace = _trace(tmp_path)
    report = tmp_path / "report.json"
    report.write_text('{"schema": "stepscope.report/1"}')
    _no_analysis(monkeypatch)
    assert main(["diff", str(trace), str(report), "--save-baseline",
                 str(tmp_path / "b.json")]) == 2
    line = _one_line(capsys)
    assert f"NEW ({report}) must be a single trace, not a saved stepscope report" in line


def test_write_atomic_keeps_the_old_file_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from stepscope.io.output import write_atomic

    out = tmp_path / "sub" / "report.html"
    write_atomic(str(out), b"old")  # folders made
    assert out.read_bytes() == b"old"

    def full_disk(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        write_atomic(str(out), b"new")
    assert out.read_bytes() == b"old"
    assert [p.name for p in out.parent.iterdir()] == ["report.html"]  # no temp file left


# ---------------------------------------------------------------- view


def test_view_port_in_use_is_one_line(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    trace = _trace(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["view", str(trace), "--port", str(port)]) == 2
    assert _one_line(capsys) == (
        f"stepscope: error: --port {port}: 127.0.0.1:{port} is already in use (another "
        "stepscope view or TensorBoard?); choose another --port")


def test_view_unknown_host_is_one_line(tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(_trace(tmp_path)), "--host", "no-such-host.invalid"]) == 2
    line = _one_line(capsys)
    assert line.startswith("stepscope: error: --host no-such-host.invalid: not an address"), line


# ---------------------------------------------------------------- files named from the cwd


def test_trtexec_file_named_from_the_working_folder(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``report x.engine.profile.json`` in its own folder: listed as ./x and as x, it was
    refused as "two profile files (x, x)"."""
    from tests.trt_builders import layer_info_text, profile_text

    (tmp_path / "m.engine.profile.json").write_text(profile_text([("Conv_1", 1.5)]))
    (tmp_path / "m.engine.graph.json").write_text(layer_info_text(
        [{"name": "Conv_1", "type": "Convolution", "inputs": [("in", "Half")],
          "outputs": [("out", "Half")]}]))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "m.engine.profile.json"]) == 0
    out = capsys.readouterr().out
    assert "Conv_1" in out
    assert "files in ./" in out  # the folder of the two files, not "/"


def test_folder_mixing_trtexec_outputs_and_traces(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """The profiler trace was left out without a word and the engine reported alone."""
    from tests.trt_builders import profile_text

    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "m.engine.profile.json").write_text(profile_text([("Conv_1", 1.5)]))
    trace = _trace(mixed)
    for argv in (["report", str(mixed)], ["diff", str(trace), str(mixed)]):
        assert main(argv) == 2
        line = _one_line(capsys)
        assert line == (f"stepscope: error: {mixed}: folder holds both trtexec outputs and "
                        f"profiler traces ({trace.name}); give the trace files, or move them "
                        "out to report the engine")


# ---------------------------------------------------------------- run


def test_run_refuses_an_unwritable_logdir_before_the_program_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The program ran (a whole training run) and only then was the trace found unwritable."""
    import sys

    marker = tmp_path / "ran"
    script = tmp_path / "train.py"
    script.write_text(f"open({str(marker)!r}, 'w').close()\n")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["run", "--logdir", str(blocker / "logs"), "--", sys.executable,
                 str(script)]) == 2
    assert _one_line(capsys) == (f"stepscope: error: --logdir '{blocker / 'logs'}': cannot "
                                 f"write traces there ({blocker} is not a directory)")
    assert not marker.exists()


def test_demo_refuses_an_unwritable_outdir_before_training(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the demo trained before the output folder was checked")

    monkeypatch.setattr("stepscope.demo.run_demo", refuse)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert main(["demo", "--outdir", str(blocker), "--steps", "3", "--device", "cpu"]) == 2
    assert _one_line(capsys) == (f"stepscope: error: --outdir '{blocker}': cannot write "
                                 f"traces there ({blocker} is not a directory)")


def test_run_with_a_python_without_torch_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """It printed the cause, then "no trace written: the program ended without stepscope
    finishing (killed or os._exit?)": two lines, the second wrong."""
    import argparse
    import json
    import sys

    from stepscope.capture import runner
    from stepscope.cli.run import _read_manifest, _report

    manifest = tmp_path / "manifest.json"
    script = tmp_path / "train.py"
    script.write_text("")
    monkeypatch.setenv(runner.CONFIG_ENV, json.dumps({"manifest": str(manifest)}))
    monkeypatch.setitem(sys.modules, "stepscope.capture.autostep", None)  # import fails
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    assert runner.main([str(script)]) == 2
    _report(_read_manifest(str(manifest)), argparse.Namespace())
    line = _one_line(capsys)
    assert line.startswith("stepscope run: no trace written: cannot profile with "), line
    assert "Python of your training environment" in line


# ---------------------------------------------------------------- JSON output


def test_ncu_json_has_no_infinity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A value of 1e400 reached the JSON as ``Infinity``: not JSON (jq, strict parsers)."""
    import json

    header = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
              '"Block Size","Grid Size","Device","CC","Section Name","Metric Name",'
              '"Metric Unit","Metric Value"')
    row = ('"0","1","p","h","k","1","7","(1,1,1)","(1,1,1)","0","8.0",'
           '"GPU Speed Of Light Throughput","Duration","nsecond","{}"')
    for value in ("1e400", "inf", "-inf"):
        csv = tmp_path / "k.csv"
        csv.write_text(f"{header}\n{row.format(value)}\n")
        assert main(["report", str(csv), "--format", "json"]) == 0
        out = capsys.readouterr().out
        doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
        assert doc["ncu"]["kernels"][0]["duration_ns"] is None


def test_a_broken_memory_timeline_beside_the_trace_does_not_cost_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The optional sidecar file failed the whole report (exit 2, nothing printed)."""
    import json

    from stepscope.formats.memory.timeline import timeline_path

    trace = _trace(tmp_path)
    side = Path(timeline_path(str(trace)))
    side.write_text("[[1, 2, 3]]")
    assert main(["report", "--no-cache", str(trace), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["source"]["partial"] is True
    assert doc["source"]["warnings"] == [
        f"memory timeline left out: {side}: memory timeline rows are not "
        "[time, action, bytes, category]"]


@pytest.mark.parametrize(("rows", "what"), [
    ([[1, 2, 2**62, 4], [2, 2, 2**62, 4]], "sizes"),  # summed: wrapped to negative sizes
    ([[2**63 - 1, 2, 8, 4]], "times"),
    ([[10**18], [[0, 1, 2, 3, 4, 5, 6, 7, 8]]], "times"),  # µs -> ns wrapped
])
def test_memory_timeline_numbers_that_would_wrap(rows: list[object], what: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """int64 overflow printed "peak 8,589,934,592.00 GiB" and the like, exit 0."""
    import json

    path = tmp_path / "timeline.json"
    path.write_text(json.dumps(rows))
    assert main(["memory", str(path)]) == 2
    assert _one_line(capsys) == (f"stepscope: error: {path}: memory timeline {what} out of "
                                 "range (corrupt file?)")


@pytest.mark.parametrize("segment", [
    {"device": 0, "total_size": 2048, "blocks": True},  # 'bool' object is not iterable
    {"device": 0, "total_size": 2**70, "blocks": []},  # int too large to convert
    {"device": 0, "total_size": float("nan"), "blocks": []},  # cannot convert NaN
    {"device": 0, "total_size": 2048,
     "blocks": [{"size": float("inf"), "state": "active_allocated", "address": 2**64}]},
    {"device": -1, "total_size": 2048, "blocks": []},  # tuple index out of range
])
def test_hostile_snapshot_fields_are_no_internal_error(
    segment: dict[str, object], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import pickle

    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps({"segments": [segment], "device_traces": []}))
    for fmt in ("text", "json"):
        assert main(["memory", str(path), "--format", fmt]) == 0
        assert capsys.readouterr().err == ""


def test_a_long_message_keeps_its_end() -> None:
    """Cut at 300 characters, a message with long paths lost what was wrong and what to do."""
    from stepscope.errors import one_line

    long_path = "/data/" + "deep/" * 80 + "rank0.pt.trace.json"
    line = one_line(f"{long_path}: not a trace (give a PyTorch profiler trace)")
    assert len(line) == 300 and "…" in line
    assert line.startswith("/data/deep/")
    assert line.endswith("not a trace (give a PyTorch profiler trace)")
    assert one_line("short\n  message") == "short message"


def test_diff_of_a_rank_folder_and_one_trace_names_each_run_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.distributed_builders import write_run

    ranks = tmp_path / "ranks"
    ranks.mkdir()
    write_run(ranks, [100.0, 100.0])
    trace = _trace(tmp_path)
    assert main(["diff", "--no-cache", str(trace), str(ranks)]) == 2
    assert _one_line(capsys) == (
        f"stepscope: error: incompatible runs: {ranks} is a 2-rank job, {trace} one process: "
        "give a folder of rank traces on both sides, or one rank's trace on both")


# ---------------------------------------------------------------- options that do not apply


def test_options_another_kind_of_input_uses_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """They were ignored without a word: ``report ranks/ --step 5`` printed every step,
    ``report engine/ --step 3`` and ``report trace.json --nsys missing.sqlite`` exit 0."""
    from tests.trt_builders import profile_text

    trace = _trace(tmp_path)
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "m.engine.profile.json").write_text(profile_text([("Conv_1", 1.5)]))
    cases = [
        ([str(trace), "--nsys", "missing.sqlite"],
         f"{trace}: --nsys does not apply to one trace (only to TensorRT engine outputs)"),
        ([str(trace), "--workers", "2"],
         f"{trace}: --workers does not apply to one trace (only to a run of many ranks)"),
        ([str(engine), "--step", "3"],
         f"{engine}: --step does not apply to TensorRT engine outputs (only to one trace)"),
        ([str(engine), "--peak-tflops", "100"],
         f"{engine}: --peak-tflops does not apply to TensorRT engine outputs (only to one "
         "trace)"),
        ([str(trace), str(trace), "--step", "1"],
         f"{trace} (and 1 more): --step does not apply to a run of many ranks (only to one "
         "trace)"),
    ]
    for argv, message in cases:
        assert main(["report", *argv]) == 2
        assert _one_line(capsys) == f"stepscope: error: {message}"


def test_unknown_url_scheme_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    """It said "cannot read (ValueError)"."""
    for argv in (["report", "nosuchproto://bucket/x.json"], ["memory", "nosuchproto://b/x"]):
        assert main(argv) == 2
        line = _one_line(capsys)
        assert line.startswith(f"stepscope: error: {argv[1]}: unknown URL scheme "
                               "'nosuchproto://'"), line


def test_a_saved_report_given_to_report_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said "JSON but not a trace (no "traceEvents" array)"."""
    trace = _trace(tmp_path)
    assert main(["report", "--no-cache", str(trace), "--format", "json"]) == 0
    saved = tmp_path / "report.json"
    saved.write_text(capsys.readouterr().out)
    assert main(["report", str(saved)]) == 2
    assert _one_line(capsys) == (f"stepscope: error: {saved}: a stepscope report or diff, not "
                                 "a trace (compare saved reports with: stepscope diff)")


def test_memory_on_a_tensorrt_profile_says_what_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It said "memory timeline rows are not [time, action, bytes, category] integers"."""
    from tests.trt_builders import profile_text

    profile = tmp_path / "m.engine.profile.json"
    profile.write_text(profile_text([("Conv_1", 1.5)]))
    assert main(["memory", str(profile)]) == 2
    assert _one_line(capsys) == (f"stepscope: error: {profile}: a TensorRT trtexec export, not "
                                 "a memory snapshot or timeline (for engines use: stepscope "
                                 "report)")


def test_one_line_elides_whole_words() -> None:
    from stepscope.errors import one_line

    text = " ".join(f"word{i}" for i in range(200))
    short = one_line(text)
    assert len(short) <= 300 and short.startswith("word0 ") and short.endswith(" word199")
    left, right = short.split("…")
    assert left.endswith(" ") and right.startswith(" ")  # no word cut around the ellipsis
    assert set(left.split() + right.split()) <= set(text.split())
    assert len(one_line("x" * 400)) == 300  # one long token: cut where it must be
