"""export_trace: twice works, gzip by name, fsspec URLs, after torch's own export."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

import stepscope
from stepscope.errors import UsageError

torch = pytest.importorskip("torch")


def _profiled() -> Any:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        for _ in range(2):
            (torch.randn(8, 8) @ torch.randn(8, 8)).sum()
    return prof


def _events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    events: list[dict[str, Any]] = json.loads(raw)["traceEvents"]
    return events


def test_export_twice_same_path_and_other_paths(tmp_path: Path) -> None:
    prof = _profiled()
    first = tmp_path / "a.pt.trace.json"
    stepscope.export_trace(prof, str(first))
    content = first.read_bytes()
    # torch itself would raise "Trace is already saved" here
    assert stepscope.export_trace(prof, str(first)) == str(first)
    assert first.read_bytes() == content
    gz = tmp_path / "sub" / "b.pt.trace.json.gz"
    stepscope.export_trace(prof, str(gz))
    assert gz.read_bytes()[:2] == b"\x1f\x8b"
    assert gzip.decompress(gz.read_bytes()) == content
    gz_again = tmp_path / "c.pt.trace.json.gz"
    stepscope.export_trace(prof, str(gz_again))
    assert gz_again.read_bytes() == gz.read_bytes()  # deterministic gzip (mtime 0)
    plain_again = tmp_path / "d.json"
    stepscope.export_trace(prof, str(plain_again))
    assert plain_again.read_bytes() == content
    assert any(e.get("name") == "aten::mm" for e in _events(gz))
    assert not list(tmp_path.rglob("*.part"))


def test_first_export_gzip_then_plain(tmp_path: Path) -> None:
    prof = _profiled()
    gz = tmp_path / "t.json.gz"
    stepscope.export_trace(prof, str(gz))
    plain = tmp_path / "t.json"
    stepscope.export_trace(prof, str(plain))
    assert plain.read_bytes() == gzip.decompress(gz.read_bytes())
    trace = stepscope.load(str(plain), cache=False)
    assert "aten::mm" in trace.strings


def test_after_torchs_own_export(tmp_path: Path) -> None:
    prof = _profiled()
    prof.export_chrome_trace(str(tmp_path / "torch.json"))
    out = tmp_path / "ours.json.gz"
    stepscope.export_trace(prof, str(out))
    names = {e.get("name") for e in _events(out)}
    assert "aten::mm" in names


def test_fsspec_url(tmp_path: Path) -> None:
    fsspec = pytest.importorskip("fsspec")
    prof = _profiled()
    url = "memory://exports/x.pt.trace.json.gz"
    stepscope.export_trace(prof, url)
    stepscope.export_trace(prof, url)
    with fsspec.open(url, "rb") as fh:
        assert fh.read(2) == b"\x1f\x8b"
    local = tmp_path / "copy.json"
    stepscope.export_trace(prof, str(local))
    assert any(e.get("name") == "aten::mm" for e in _events(local))


def test_profile_then_export_again(tmp_path: Path) -> None:
    """The scheduled profiler already wrote the cycle; exporting it again copies it."""
    with stepscope.profile(str(tmp_path), run="r", wait=0, warmup=1, active=1) as prof:
        for _ in range(3):
            torch.randn(4, 4).sum()
            prof.step()
    again = tmp_path / "again.json"
    stepscope.export_trace(prof, str(again))
    assert prof.last_trace is not None
    assert again.read_bytes() == gzip.decompress(Path(prof.last_trace).read_bytes())


def test_nothing_recorded_yet(tmp_path: Path) -> None:
    from torch.profiler import profile

    with pytest.raises(UsageError, match="not recorded anything"):
        stepscope.export_trace(profile(), str(tmp_path / "x.json"))


def test_unwritable_destinations_are_user_errors(tmp_path: Path) -> None:
    pytest.importorskip("fsspec")
    from stepscope.errors import TraceSourceError

    prof = _profiled()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TraceSourceError, match="cannot write"):
        stepscope.export_trace(prof, str(blocker / "x.json"))  # parent is a file
    with pytest.raises(TraceSourceError, match=r"nosuch://x/y\.json: cannot open"):
        stepscope.export_trace(prof, "nosuch://x/y.json")
    assert not list(tmp_path.rglob("*.part"))
