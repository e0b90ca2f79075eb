"""Logdir discovery lists Nsight Systems SQLite exports beside Kineto traces."""

from __future__ import annotations

from pathlib import Path

from stepscope.server.logdir import discover


def test_sqlite_exports_are_traces(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "report1.sqlite").write_bytes(b"")
    (tmp_path / "run" / "report1.nsys-rep").write_bytes(b"")  # needs `nsys export` first
    (tmp_path / "run" / "w0.5.pt.trace.json").write_text("{}")
    got = {f.id: (f.run, f.worker, f.span) for f in discover(str(tmp_path))}
    assert got == {"run/report1.sqlite": ("run", "report1", ""),
                   "run/w0.5.pt.trace.json": ("run", "w0", "5")}


def test_one_entry_per_tensorrt_engine(tmp_path: Path) -> None:
    for kind in ("graph.json", "profile.json", "timing.json", "profile.metadata.json"):
        (tmp_path / f"net.onnx.engine.{kind}").write_text("[]")
    (tmp_path / "other.engine.graph.json").write_text("{}")
    got = {f.id: f.worker for f in discover(str(tmp_path))}
    assert got == {"net.onnx.engine.profile.json": "net.onnx.engine",
                   "other.engine.graph.json": "other.engine"}


def test_a_trtexec_folder_is_one_entry(tmp_path: Path) -> None:
    """trtexec outputs under names of the user's choosing (profile.json, layer_info.json, a log
    trt.out) are one entry, the folder, read whole; a file of the same name that is not a
    trtexec output stays a trace of its own."""
    import shutil

    from tests.conftest import shared_trace

    src = shared_trace("tensorrt/trex-notebooks-src-2023")
    engine = tmp_path / "yolo"
    engine.mkdir()
    for name in ("profile.json", "layer_info.json", "trt.out", "README.md"):
        shutil.copyfile(src / name, engine / name)  # the listing skips symlinks
    other = tmp_path / "train"
    other.mkdir()
    (other / "profile.json").write_text('{"traceEvents": []}')  # a Kineto trace named alike
    files = {f.id: f for f in discover(str(tmp_path))}
    assert sorted(files) == ["train/profile.json", "yolo"]
    f = files["yolo"]
    assert (f.run, f.worker, f.kind, f.path) == (tmp_path.name, "yolo", "tensorrt", str(engine))
    assert f.size == sum((src / n).stat().st_size for n in ("profile.json", "layer_info.json",
                                                              "trt.out"))
    assert files["train/profile.json"].kind == "trace"


def test_the_trtexec_folder_entry_has_the_whole_engine_report(tmp_path: Path) -> None:
    """The entry's report is `stepscope report FOLDER`'s: precision and times together, and
    the TensorRT findings (the two half entries had neither)."""
    import time

    import pytest

    pytest.importorskip("httpx")
    from starlette.testclient import TestClient
    from tests.conftest import shared_trace

    from stepscope.formats.tensorrt.load import load_trt_run
    from stepscope.report.tensorrt import build_trt_report
    from stepscope.server.app import ViewConfig, create_app

    src = shared_trace("tensorrt/trex-notebooks-src-2023")
    expected = build_trt_report(load_trt_run(str(src)), top=1000).to_json()
    assert expected["findings"] and expected["tensorrt"]["engine_precision"]
    with TestClient(create_app(ViewConfig(root=str(src.parent), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        runs = c.get("/api/runs").json()["runs"]
        spans = [s for r in runs for w in r["workers"] for s in w["spans"]
                 if s["trace"].startswith("trex-notebooks")]
        assert [(s["trace"], s["kind"]) for s in spans] == [("trex-notebooks-src-2023", "tensorrt")]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            r = c.get("/api/report", params={"trace": "trex-notebooks-src-2023"})
            if r.status_code != 202:
                break
            time.sleep(0.1)
        assert r.status_code == 200, r.text
        got = r.json()
    assert [f["id"] for f in got["findings"]] == [f["id"] for f in expected["findings"]]
    assert got["tensorrt"]["engine_precision"] == expected["tensorrt"]["engine_precision"]
    assert got["tensorrt"]["inference_ms"] == expected["tensorrt"]["inference_ms"]


def test_a_folder_entry_reloads_when_a_file_in_it_changes(tmp_path: Path) -> None:
    import os

    from stepscope.server.store import file_stamp

    (tmp_path / "profile.json").write_text("[1]")
    (tmp_path / "trt.out").write_text("abc")
    os.utime(tmp_path / "profile.json", (100, 100))
    os.utime(tmp_path / "trt.out", (200, 200))
    assert file_stamp(str(tmp_path)) == (200.0, 6)
    (tmp_path / "profile.json").write_text("[1, 2]")  # rewritten: newer, longer
    os.utime(tmp_path / "profile.json", (300, 300))
    assert file_stamp(str(tmp_path)) == (300.0, 9)
