"""Hostile and changing inputs on the input side (issue 25): files that shrink while read,
gzip bombs, odd file names, a tampered cache and credentials in URLs."""

from __future__ import annotations

import gzip
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tests.builders import TraceBuilder

import stepscope
from stepscope.cli.main import main
from stepscope.errors import TraceFormatError, TraceSourceError, UsageError
from stepscope.formats.kineto import reader as kineto_reader
from stepscope.io import source

ROOT = Path(__file__).resolve().parents[2]


def _builder(tag: str = "", steps: int = 2) -> TraceBuilder:
    b = TraceBuilder()
    if tag:
        b.op(f"tag::{tag}", 0, 1)
    for s in range(steps):
        with b.step(s + 1, 100 * s, 100):
            for i in range(20):
                op = b.op(f"aten::op{i}", 100 * s + 1 + 4 * i, 3)
                b.launch(op, "cudaLaunchKernel", 100 * s + 1.5 + 4 * i, 1, kernel=f"k{i}",
                         k_ts=100 * s + 2 + 4 * i, k_dur=2)
    return b


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(args)
    return code, capsys.readouterr().err.strip().splitlines()


# ---------------------------------------------------------------- 1. a file that shrinks


_SHRINK = textwrap.dedent("""
    import os, sys
    from stepscope.io import source
    from stepscope.cli.main import entry_point
    path = sys.argv[1]
    real = source._read_local

    def shrinking(p):  # the file is cut between the stat and the read of its bytes
        raw = real(p)
        os.truncate(path, os.path.getsize(path) // 2)
        return raw

    source._read_local = shrinking
    sys.argv = ["stepscope", "report", "--no-cache", "--format", "json", path]
    entry_point()
""")


def test_file_that_shrinks_while_read_is_salvaged_not_a_signal(tmp_path: Path) -> None:
    """A memory-mapped file cut under the reader died of SIGBUS (exit 135, no message)."""
    b = _builder(steps=40)
    path = b.write(tmp_path, "growing.json")
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}"}
    run = subprocess.run([sys.executable, "-c", _SHRINK, str(path)], capture_output=True,
                         text=True, env=env, timeout=120)
    assert run.returncode == 0, (run.returncode, run.stderr[-2000:])
    assert "changed while it was read" in run.stdout
    assert "file is truncated" in run.stdout


def test_shrunk_file_keeps_the_complete_events(tmp_path: Path) -> None:
    b = _builder(steps=40)
    path = b.write(tmp_path, "cut.json")
    raw = source.read_source(str(path))
    os.truncate(path, path.stat().st_size // 2)
    trace = kineto_reader.read_kineto(raw)
    assert 0 < trace.meta.events < len(b.events)
    assert any("changed while it was read" in w for w in trace.meta.warnings)


def test_file_emptied_while_read_is_one_line(tmp_path: Path) -> None:
    path = _builder().write(tmp_path, "gone.json")
    raw = source.read_source(str(path))
    os.truncate(path, 0)
    with pytest.raises(TraceFormatError, match="empty"):
        _ = raw.data


def test_cache_hit_by_stat_key_never_reads_a_plain_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(_builder("plain-lazy").write(tmp_path, "lazy.json"))
    first = stepscope.load(path)

    def fail(*a: object) -> bytes:
        raise AssertionError("read again")

    monkeypatch.setattr(source, "_read_plain", fail)
    assert stepscope.load(path).meta.events == first.meta.events


# ---------------------------------------------------------------- 2. decompression limits


def test_gzip_beyond_the_ceiling_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb") as gz:
        gz.write(b'{"traceEvents": [')
        for _ in range(8):
            gz.write(b" " * (1 << 20))
        gz.write(b"]}")
    monkeypatch.setenv(source.MAX_INFLATED_ENV, "2M")
    with pytest.raises(TraceSourceError, match=r"inflates to more than 2\.0 MiB"):
        _ = source.read_source(str(bomb)).data
    code, err = _cli(["report", "--no-cache", str(bomb)], capsys)
    assert code == 2 and len(err) == 1, err
    assert str(bomb) in err[0] and "2.0 MiB" in err[0] and source.MAX_INFLATED_ENV in err[0]


def test_gzip_within_the_ceiling_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    b = _builder("within")
    path = b.write(tmp_path, "ok.json.gz")
    size = len(gzip.decompress(path.read_bytes()))
    monkeypatch.setenv(source.MAX_INFLATED_ENV, str(size))
    assert stepscope.load(str(path), cache=False).meta.events == len(b.events)
    monkeypatch.setenv(source.MAX_INFLATED_ENV, str(size - 1))
    with pytest.raises(TraceSourceError, match="inflates to more than"):
        stepscope.load(str(path), cache=False)


def test_ceiling_bounds_the_salvage_of_a_cut_gzip(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    raw = b'{"traceEvents": [' + b" " * (4 << 20)
    cut = gzip.compress(raw)[:-100]
    path = tmp_path / "cut.json.gz"
    path.write_bytes(cut)
    monkeypatch.setenv(source.MAX_INFLATED_ENV, "1M")
    with pytest.raises(TraceSourceError, match="inflates to more than"):
        _ = source.read_source(str(path)).data


def test_multi_member_gzip_is_read_whole(tmp_path: Path) -> None:
    b = _builder("members")
    text = b.write(tmp_path, "t.json").read_bytes()
    path = tmp_path / "members.json.gz"
    path.write_bytes(gzip.compress(text[:1000]) + gzip.compress(text[1000:]))
    assert stepscope.load(str(path), cache=False).meta.events == len(b.events)


@pytest.mark.parametrize("value", ["lots", "-1", "", "1.5G"])
def test_ceiling_setting(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(source.MAX_INFLATED_ENV, value)
    if value == "":
        assert source.max_inflated_bytes() >= 1 << 30  # half the physical memory, >= 1 GiB
    elif value == "1.5G":
        assert source.max_inflated_bytes() == 3 << 29
    else:
        with pytest.raises(UsageError, match=source.MAX_INFLATED_ENV):
            source.max_inflated_bytes()


def test_trailing_whitespace_is_blanked_across_windows(tmp_path: Path) -> None:
    """Trailing blanks (3 MB, so the backward scan crosses 1 MB windows) become spaces, and
    the comma before them too; they were blanked one byte at a time in Python (~80 ms/MB)."""
    body = b'{"a": 1},' + b" \t\n\r\x0b\x0c" * (1 << 19)
    piece = bytes(kineto_reader._piece(memoryview(body), 0, len(body)))
    assert piece == b'[{"a": 1} ' + b" " * (len(body) - 9) + b"]"
    assert bytes(kineto_reader._piece(memoryview(b" " * 10), 0, 10)) == b"[" + b" " * 10 + b"]"
    b = _builder("blanks")
    text = b.write(tmp_path, "t.json").read_bytes()
    close = text.rindex(b"]")
    path = tmp_path / "padded.json"
    path.write_bytes(text[:close] + b" \t\n\r" * (1 << 20) + text[close:])
    assert stepscope.load(str(path), cache=False).meta.events == len(b.events)
