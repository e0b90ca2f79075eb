"""Storage layer and Arrow cache: fsspec URLs, gzip sniffing, cache hits and failures."""

from __future__ import annotations

import gzip
import os
import stat
from pathlib import Path

import fsspec
import numpy as np
import pytest
from tests.builders import TraceBuilder

import stepscope
from stepscope.errors import TraceSourceError
from stepscope.formats import load_trace
from stepscope.io import cache
from stepscope.io.source import read_source
from stepscope.model import Trace


def _builder(tag: str = "") -> TraceBuilder:
    b = TraceBuilder()
    if tag:  # distinct content, so a distinct cache entry
        b.op(f"tag::{tag}", 0, 1)
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 10, 20, input_dims=[[4, 8], [8, 16]])
        b.launch(op, "cudaLaunchKernel", 12, 3, kernel="sgemm<float>", k_ts=30, k_dur=40)
    with b.step(2, 100, 100):
        op = b.op("aten::add", 110, 5)
        b.launch(op, "cudaLaunchKernel", 111, 2, kernel="add_kernel", k_ts=130, k_dur=10)
    b.memory(115, 4096, total=4096)
    return b


def _same(a: Trace, b: Trace) -> None:
    assert a.strings == b.strings
    assert a.meta.events == b.meta.events
    for name in Trace.TABLES:
        ca, cb = getattr(a, name).columns(), getattr(b, name).columns()
        assert ca.keys() == cb.keys()
        for col in ca:
            np.testing.assert_array_equal(ca[col], cb[col], err_msg=f"{name}.{col}")
            assert ca[col].dtype == cb[col].dtype


def test_memory_url_reads_like_a_local_file(tmp_path: Path) -> None:
    local = _builder().write(tmp_path, "t.json.gz")
    fs = fsspec.filesystem("memory")
    with fs.open("/traces/t.json.gz", "wb") as fh:
        fh.write(local.read_bytes())
    remote = stepscope.load("memory://traces/t.json.gz", cache=False)
    _same(remote, stepscope.load(str(local), cache=False))
    assert remote.meta.path == "memory://traces/t.json.gz"
    assert len(remote.device) == 2


def test_memory_url_missing_object_is_a_one_line_error() -> None:
    with pytest.raises(TraceSourceError, match=r"memory://nope/missing\.json"):
        stepscope.load("memory://nope/missing.json", cache=False)


def test_gzip_sniffed_by_magic_bytes_not_name(tmp_path: Path) -> None:
    b = _builder()
    plain = b.write(tmp_path, "plain.json")
    gz_named_json = tmp_path / "really_gzip.json"
    gz_named_json.write_bytes(gzip.compress(plain.read_bytes()))
    plain_named_gz = tmp_path / "really_plain.json.gz"
    plain_named_gz.write_bytes(plain.read_bytes())
    assert read_source(str(gz_named_json)).compressed
    assert not read_source(str(plain_named_gz)).compressed
    ref = stepscope.load(str(plain), cache=False)
    _same(stepscope.load(str(gz_named_json), cache=False), ref)
    _same(stepscope.load(str(plain_named_gz), cache=False), ref)


def test_second_open_comes_from_cache_and_equals_the_parse(tmp_path: Path) -> None:
    path = str(_builder().write(tmp_path, "c.json"))
    first = stepscope.load(path)
    assert any((cache.cache_dir() / "traces").iterdir())
    calls: list[int] = []
    import stepscope.formats.load as load_mod

    real = load_mod.read_kineto

    def spy(*a: object, **k: object) -> Trace:
        calls.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    load_mod.read_kineto = spy  # type: ignore[assignment]
    try:
        second = stepscope.load(path)
        bypass = stepscope.load(path, cache=False)
    finally:
        load_mod.read_kineto = real
    assert calls == [1]  # only the cache=False open parsed
    _same(first, second)
    _same(first, bypass)
    assert second.meta.path == path


def test_cache_key_follows_content_not_name(tmp_path: Path) -> None:
    a = _builder().write(tmp_path, "a.json")
    b = tmp_path / "b.json"
    b.write_bytes(a.read_bytes())
    ka = cache.key_for(read_source(str(a)), "v")
    kb = cache.key_for(read_source(str(b)), "v")
    assert ka == kb
    b.write_bytes(a.read_bytes().replace(b"sgemm", b"dgemm"))
    os.utime(b, ns=(1, 1))
    assert cache.key_for(read_source(str(b)), "v") != ka


def test_content_hash_same_for_bytes_view_and_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blob = os.urandom((1 << 20) + 17)
    f = tmp_path / "blob.bin"
    f.write_bytes(blob)
    for piece in (cache.HASH_PIECE, 4096):  # one piece, then many pieces on two threads
        monkeypatch.setattr(cache, "HASH_PIECE", piece)
        h = cache.content_hash(blob)
        assert h == cache.content_hash(memoryview(blob)) == cache.content_hash(blob, str(f))
        assert h != cache.content_hash(blob[:-1])
        swapped = blob[4096:8192] + blob[:4096] + blob[8192:]
        assert h != cache.content_hash(swapped)


def test_read_only_cache_dir_does_not_break_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ro = tmp_path / "ro-cache"
    ro.mkdir()
    os.chmod(ro, stat.S_IRUSR | stat.S_IXUSR)
    monkeypatch.setenv("XDG_CACHE_HOME", str(ro))
    try:
        path = str(_builder().write(tmp_path, "r.json"))
        t1 = stepscope.load(path)
        t2 = stepscope.load(path)
        _same(t1, t2)
    finally:
        os.chmod(ro, stat.S_IRWXU)


def test_cache_home_is_a_file_does_not_break_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    path = str(_builder().write(tmp_path, "f.json"))
    assert len(stepscope.load(path).device) == 2


@pytest.mark.parametrize("damage", ["truncate", "garbage", "delete_table", "bad_meta", "empty"])
def test_corrupt_cache_entry_is_dropped_and_reparsed(tmp_path: Path, damage: str) -> None:
    path = str(_builder(damage).write(tmp_path, f"{damage}.json"))
    ref = stepscope.load(path, cache=False)
    stepscope.load(path)  # fills the cache
    key = cache.key_for(read_source(path), __import__("stepscope.formats.kineto.reader",
                                                     fromlist=["READER_VERSION"]).READER_VERSION)
    entry = cache.cache_dir() / "traces" / key
    assert entry.is_dir()
    target = entry / "device.arrow"

    def replace(p: Path, data: bytes) -> None:  # never rewrite a mapped file in place
        tmp = p.with_suffix(".new")
        tmp.write_bytes(data)
        os.replace(tmp, p)

    if damage == "truncate":
        replace(target, target.read_bytes()[:40])
    elif damage == "garbage":
        replace(target, b"\x00garbage" * 10)
    elif damage == "delete_table":
        target.unlink()
    elif damage == "bad_meta":
        replace(entry / "meta.json", b"{not json")
    else:
        replace(entry / "strings.arrow", b"")
    again = stepscope.load(path)
    _same(ref, again)
    # the damaged entry was replaced by a good one
    _same(ref, stepscope.load(path))


def test_cache_roundtrip_keeps_empty_tables_and_meta(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("aten::relu", 1, 2)  # no GPU work at all
    path = str(b.write(tmp_path, "cpu.json"))
    t1 = load_trace(path)
    t2 = load_trace(path)
    assert len(t2.device) == 0 and t2.device.ts.dtype == np.int64
    assert t1.meta == t2.meta
    _same(t1, t2)


def test_missing_local_file(tmp_path: Path) -> None:
    with pytest.raises(TraceSourceError, match="no such file"):
        stepscope.load(str(tmp_path / "absent.json"))


def test_cache_hit_by_stat_key_never_inflates_gzip(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from stepscope.io import source

    path = str(_builder("gz-lazy").write(tmp_path, "lazy.json.gz"))
    first = stepscope.load(path)  # fills the cache and the stat index

    def fail(*a: object) -> bytes:
        raise AssertionError("inflated again")

    monkeypatch.setattr(source, "_inflate", fail)
    _same(first, stepscope.load(path))
    with pytest.raises(AssertionError, match="inflated again"):
        stepscope.load(path, cache=False)
