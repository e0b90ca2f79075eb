"""Hostile and changing inputs on the input side (issue 25): files that shrink while read,
gzip bombs, odd file names, a tampered cache and credentials in URLs."""

from __future__ import annotations

import functools
import gzip
import hashlib
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.builders import TraceBuilder
from tests.nsys_builders import NsysBuilder
from tests.trt_builders import nsys_sqlite

import stepscope
from stepscope.cli.main import main
from stepscope.errors import (
    TraceFormatError,
    TraceSourceError,
    UsageError,
    one_line,
    redact_urls,
)
from stepscope.formats.kineto import reader as kineto_reader
from stepscope.formats.kineto.reader import READER_VERSION
from stepscope.formats.tensorrt.nsys import read_layer_kernels
from stepscope.io import cache, source
from stepscope.io.source import read_source
from stepscope.model import Trace
from stepscope.report.run import find_run

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


# ---------------------------------------------------------------- 6. the cache


def _cached(tmp_path: Path, tag: str) -> tuple[str, Trace, Path]:
    """A trace file, its reference reading (no cache) and its cache entry (filled)."""
    path = str(_builder(tag).write(tmp_path, f"{tag}.json"))
    ref = stepscope.load(path, cache=False)
    stepscope.load(path)
    entry = cache.cache_dir() / "traces" / cache.key_for(read_source(path), READER_VERSION)
    assert entry.is_dir()
    return path, ref, entry


def _replace(p: Path, data: bytes) -> None:
    tmp = p.with_suffix(".new")
    tmp.write_bytes(data)
    os.replace(tmp, p)


def _same(a: Trace, b: Trace) -> None:
    assert a.meta == b.meta and a.strings == b.strings
    for name in Trace.TABLES:
        ta, tb = getattr(a, name).columns(), getattr(b, name).columns()
        assert ta.keys() == tb.keys()
        for c in ta:
            nan = ta[c].dtype.kind == "f"
            assert np.array_equal(ta[c], tb[c], equal_nan=nan), (name, c)


def _notice(capsys: pytest.CaptureFixture[str], path: str, *words: str) -> None:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"stepscope: {path}: its cached copy is damaged")
    for w in words:
        assert w in err[0], err[0]


@pytest.mark.parametrize("name", ["device.arrow", "host.arrow", "strings.arrow"])
def test_flipped_bytes_in_the_cache_are_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path, ref, entry = _cached(tmp_path, f"flip-{name}")
    data = bytearray((entry / name).read_bytes())
    # the column buffers sit between the schema (head) and the footer (tail): flip one byte
    # in each of several places there, as a bad disk or a stray write would
    for at in range(len(data) // 4, 3 * len(data) // 4, max(1, len(data) // 16)):
        data[at] ^= 0x01
    _replace(entry / name, bytes(data))
    capsys.readouterr()
    _same(ref, stepscope.load(path))
    _notice(capsys, path, f"{name} fails its checksum")
    _same(ref, stepscope.load(path))  # rebuilt: a good entry again, no notice
    assert capsys.readouterr().err == ""


def test_edited_meta_json_is_rebuilt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path, ref, entry = _cached(tmp_path, "meta")
    meta = json.loads((entry / "meta.json").read_bytes())
    assert meta["vendor"] == "nvidia" and meta["events"] == ref.meta.events > 1
    meta.update(vendor="amd", events=1)
    _replace(entry / "meta.json", json.dumps(meta).encode())
    capsys.readouterr()
    again = stepscope.load(path)
    assert again.meta.vendor == "nvidia" and again.meta.events == ref.meta.events
    _notice(capsys, path, "meta.json fails its checksum")


def test_entry_without_checksums_is_rebuilt(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path, ref, entry = _cached(tmp_path, "nosums")
    (entry / cache.SUMS).unlink()
    capsys.readouterr()
    _same(ref, stepscope.load(path))
    _notice(capsys, path, cache.SUMS)


@pytest.mark.parametrize("crafted", ["{digest}/../../../{victim}", "../../../{victim}",
                                     "{outside}", "not-hex-at-all", ""])
def test_stat_index_is_never_used_as_a_path(tmp_path: Path, crafted: str) -> None:
    """A crafted stat/ entry made stepscope delete a directory outside the cache: the index
    names a real entry, then climbs out of it to a directory that looks like a damaged entry."""
    tag = hashlib.sha256(crafted.encode()).hexdigest()[:8]
    path, ref, entry = _cached(tmp_path, f"stat-{tag}")
    victim = cache.cache_dir().parent / f"victim-{tag}"  # traces/<entry>/../../.. is here
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    (victim / "meta.json").write_text("{not json")  # looks like a damaged entry
    stat_key = read_source(path).stat_key
    assert stat_key is not None
    stat_file = cache.cache_dir() / "stat" / hashlib.sha256(stat_key.encode()).hexdigest()[:32]
    assert stat_file.is_file()
    text = crafted.format(digest=entry.name.rsplit("-", 1)[-1], victim=victim.name,
                          outside=victim)
    stat_file.write_text(text)
    _same(ref, stepscope.load(path))
    assert (victim / "keep.txt").read_text() == "precious"
    assert (victim / "meta.json").read_text() == "{not json"
    assert stat_file.read_text() == entry.name.rsplit("-", 1)[-1]  # re-hashed and rewritten


def test_entry_that_links_outside_the_cache_is_unlinked_not_followed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, ref, entry = _cached(tmp_path, "link")
    outside = tmp_path / "outside"
    shutil.copytree(entry, outside)
    (outside / "meta.json").write_text("{tampered")
    shutil.rmtree(entry)
    entry.symlink_to(outside, target_is_directory=True)
    capsys.readouterr()
    _same(ref, stepscope.load(path))
    _notice(capsys, path, "not a directory inside the cache")
    assert (outside / "meta.json").read_text() == "{tampered"  # untouched
    assert entry.is_dir() and not entry.is_symlink()  # rebuilt in place


# ---------------------------------------------------------------- 5. file names


@pytest.mark.parametrize("name", ["a#b.sqlite", "a?b.sqlite", "a%20b.sqlite", "a b&c=d.sqlite"])
def test_sqlite_names_with_uri_characters(tmp_path: Path, name: str) -> None:
    """``a#b.sqlite`` was read as "not an Nsight export" and created an empty ``a``."""
    folder = tmp_path / "in"
    folder.mkdir()
    b = NsysBuilder()
    b.launch("cudaLaunchKernel_v7000", 100, 10, kernel="sgemm", k_ts=200, k_dur=50)
    path = b.write(folder / name)
    trt = folder / f"trt-{name}"
    nsys_sqlite(trt, [("Conv_1", [("k1", 1_000)])])
    before = sorted(os.listdir(folder))
    t = stepscope.load(str(path), cache=False)
    assert t.meta.format == "nsys" and len(t.device) == 1
    assert t.name(int(t.device.name[0])) == "sgemm"
    assert "Conv_1" in read_layer_kernels(str(trt)).range_names
    assert sorted(os.listdir(folder)) == before
    assert sorted(os.listdir(tmp_path)) == ["in"]


# ---------------------------------------------------------------- 9. credentials in URLs


@pytest.mark.parametrize(("text", "shown"), [
    ("s3://AKIAKEY:s3cr3t@bucket/run/t.json: no such object",
     "s3://***@bucket/run/t.json: no such object"),
    ("http://user:pa/ss@host:8080/t.json", "http://***@host:8080/t.json"),
    ("https://token@example.com/a?b=1", "https://***@example.com/a?b=1"),
    ("https://h/t.json?X-Amz-Credential=AK%2F1&X-Amz-Signature=abc&x=1",
     "https://h/t.json?X-Amz-Credential=***&X-Amz-Signature=***&x=1"),
    ("https://acct.blob.core.windows.net/c/t.json?sv=2022&sig=abc%3D",
     "https://acct.blob.core.windows.net/c/t.json?sv=2022&sig=***"),
    ("gs://bucket/t.json", "gs://bucket/t.json"),
    ("/local/a:b@c.json", "/local/a:b@c.json"),
])
def test_redact_urls(text: str, shown: str) -> None:
    assert redact_urls(text) == shown
    assert str(TraceSourceError(text)) == shown
    assert one_line(text) == shown


def test_missing_object_message_has_no_credentials(capsys: pytest.CaptureFixture[str]) -> None:
    url = "memory://AKIAKEY:s3cr3t@bucket/absent.json"
    with pytest.raises(TraceSourceError) as err:
        _ = read_source(url).data
    assert "s3cr3t" not in str(err.value) and "memory://***@bucket/absent.json" in str(err.value)
    code, lines = _cli(["report", "--no-cache", url], capsys)
    assert code == 2 and len(lines) == 1 and "s3cr3t" not in lines[0], lines


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server on 127.0.0.1 serving ``tmp_path/www``."""
    www = tmp_path / "www"
    www.mkdir()
    handler = functools.partial(_Quiet, directory=str(www))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", www
    finally:
        server.shutdown()
        server.server_close()


def test_http_url_with_credentials(http_dir: tuple[str, Path],
                                   capsys: pytest.CaptureFixture[str]) -> None:
    host, www = http_dir
    b = _builder("http")
    b.write(www, "t.json")
    url = f"http://user:s3cr3t@{host}/t.json"
    trace = stepscope.load(url, cache=False)
    assert trace.meta.events == len(b.events)
    assert "s3cr3t" not in trace.meta.path and trace.meta.path == f"http://***@{host}/t.json"
    assert main(["report", "--format", "json", url]) == 0
    out = capsys.readouterr()
    assert "s3cr3t" not in out.out + out.err
    code, lines = _cli(["report", "--no-cache", f"http://user:s3cr3t@{host}/absent.json"], capsys)
    shown = f"http://***@{host}/absent.json"
    assert code == 2 and lines == [f"stepscope: error: {shown}: no such object"]


def test_unreachable_http_host_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://user:s3cr3t@127.0.0.1:{port}/t.json"
    code, lines = _cli(["report", "--no-cache", url], capsys)
    assert code == 2 and len(lines) == 1, lines
    shown = f"http://***@127.0.0.1:{port}/t.json"
    assert lines[0].startswith(f"stepscope: error: {shown}: cannot reach")
    assert "no such object" not in lines[0]


def test_run_location_is_shown_without_credentials() -> None:
    run = find_run(["http://user:s3cr3t@host/r0.json", "http://user:s3cr3t@host/r1.json"])
    assert run.location == "http://***@host/r0.json"
    assert run.paths[1] == "http://user:s3cr3t@host/r1.json"  # still used to read


def test_stat_index_links_are_not_followed(tmp_path: Path) -> None:
    path, ref, entry = _cached(tmp_path, "stat-link")
    stat_key = read_source(path).stat_key
    assert stat_key is not None
    stat_file = cache.cache_dir() / "stat" / hashlib.sha256(stat_key.encode()).hexdigest()[:32]
    target = tmp_path / "elsewhere.txt"
    target.write_text(entry.name.rsplit("-", 1)[-1])  # a valid digest, behind a link
    stat_file.unlink()
    stat_file.symlink_to(target)
    _same(ref, stepscope.load(path))
    assert target.read_text() == entry.name.rsplit("-", 1)[-1]  # not written through
    assert stat_file.is_file() and not stat_file.is_symlink()


@pytest.mark.parametrize("body", ['{"traceEvents": [',
                                  '{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur'])
def test_trace_cut_before_any_event_says_truncated(tmp_path: Path, body: str) -> None:
    from stepscope.errors import TraceFormatError
    from stepscope.formats.load import load_trace

    path = tmp_path / "cut.json"
    path.write_text(body)
    with pytest.raises(TraceFormatError, match=r"cut\.json: truncated JSON"):
        load_trace(str(path), use_cache=False)
