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
