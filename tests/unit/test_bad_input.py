"""Bad input: a one-line error naming the file (exit 2), or partial results saying what was
skipped."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from tests.builders import TraceBuilder

import stepscope
from stepscope.cli.main import main
from stepscope.errors import StepscopeError, TraceFormatError, TraceSourceError


def _good() -> TraceBuilder:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        for i in range(30):
            op = b.op(f"aten::op{i}", 1 + 3 * i, 2)
            b.launch(op, "cudaLaunchKernel", 1.5 + 3 * i, 1, kernel=f"k{i}", k_ts=5 + 3 * i,
                     k_dur=2)
    return b


def _cli(path: Path | str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["report", "--no-cache", str(path)])
    return code, capsys.readouterr().err


def _assert_one_line_error(
    path: Path | str, capsys: pytest.CaptureFixture[str], *words: str
) -> None:
    code, err = _cli(path, capsys)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0]
    for w in words:
        assert w in lines[0].lower(), lines[0]


def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    with pytest.raises(TraceFormatError, match="empty"):
        stepscope.load(str(p))
    _assert_one_line_error(p, capsys, "empty")


def test_whitespace_only_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "ws.json"
    p.write_bytes(b"  \n\n  ")
    _assert_one_line_error(p, capsys, "empty")


def test_empty_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "empty.json.gz"
    p.write_bytes(gzip.compress(b""))
    _assert_one_line_error(p, capsys, "empty")


def test_truncated_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Salvaged like a truncated .json (issue 9): the complete events, with the warning."""
    b = _good()
    full = b.write(tmp_path, "full.json.gz").read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(full[: len(full) // 2])
    t = stepscope.load(str(p), cache=False)
    assert 0 < t.meta.events < len(b.events)
    assert any("gzip data is truncated" in w for w in t.meta.warnings)
    assert any("file is truncated" in w for w in t.meta.warnings)


def test_gzip_cut_inside_the_header_is_an_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    full = _good().write(tmp_path, "full.json.gz").read_bytes()
    p = tmp_path / "cut.json.gz"
    p.write_bytes(full[:12])
    with pytest.raises(TraceSourceError, match="truncated"):
        stepscope.load(str(p))
    _assert_one_line_error(p, capsys, "truncated")


def test_corrupt_gzip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = bytearray(_good().write(tmp_path, "full.json.gz").read_bytes())
    full[20:40] = b"\xff" * 20
    p = tmp_path / "bad.json.gz"
    p.write_bytes(bytes(full))
    _assert_one_line_error(p, capsys, "gzip")


@pytest.mark.parametrize("content", [
    b'{"hello": "world"}', b"[1, 2, 3]", b'"just a string"', b"42", b"null",
    b'{"traceEvents": 5}', b'{"traceEvents": {"a": 1}}', b"[]", b'{"traceEvents": []}',
    b"<html><body>not json</body></html>", b"\x00\x01\x02binary", b"{,,}",
])
def test_not_a_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes) -> None:
    p = tmp_path / "notatrace.json"
    p.write_bytes(content)
    with pytest.raises(StepscopeError):
        stepscope.load(str(p), cache=False)
    _assert_one_line_error(p, capsys)


def test_directory_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _assert_one_line_error(tmp_path, capsys, "directory")


def test_trace_with_no_gpu_events_is_a_cpu_report(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    b = TraceBuilder(device_properties=[])
    with b.step(1, 0, 50):
        b.op("aten::relu", 1, 10)
    path = b.write(tmp_path, "cpu.json")
    t = stepscope.load(str(path), cache=False)
    assert len(t.device) == 0 and t.meta.vendor == "cpu"
    code, err = _cli(path, capsys)
    assert code in (0, 2)
    if code == 2:
        assert str(path) in err and len(err.strip().splitlines()) == 1


def test_unknown_categories_and_bad_durations_are_counted(tmp_path: Path) -> None:
    b = _good()
    base = {"ph": "X", "pid": 1, "tid": 1, "args": {}}
    b.events += [
        {**base, "cat": "my_custom_cat", "name": "x", "ts": 5, "dur": 1},
        {**base, "cat": "my_custom_cat", "name": "y", "ts": 6, "dur": 1},
        {**base, "cat": "kernel", "name": "neg", "ts": 7, "dur": -5},
        {**base, "cat": "kernel", "name": "nodur", "ts": 8},
        {**base, "cat": "cpu_op", "name": "huge", "ts": 9, "dur": 1e15},
        {**base, "cat": "cpu_op", "name": "nots", "dur": 3},
        {**base, "cat": "cpu_op", "name": "far", "ts": 1e300, "dur": 3},
    ]
    t = b.load(tmp_path)
    sk = t.meta.skipped
    assert sk["unknown category 'my_custom_cat'"] == 2
    assert sk["negative duration"] == 1
    assert sk["missing duration"] == 1
    assert sk["absurd duration (> 7 days)"] == 1
    assert sk["missing or invalid timestamp"] == 2
    assert len(t.device) == 30  # the good kernels are all there
    names = {t.strings[i] for i in t.host.name}
    assert not names & {"huge", "nots", "far"}


def test_wrong_field_types_drop_only_those_fields(tmp_path: Path) -> None:
    b = _good()
    b.events += [
        {"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": "oops"},
        {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1,
         "args": {"correlation": 2**80}},
        "not an event", 17, None, [1, 2],
    ]
    t = b.load(tmp_path)
    # issue 9: an odd field is coerced ("name": 5 -> "5") or dropped ("args": "oops"), the
    # event kept; the out-of-range correlation is kept, marked missing (-1); "ts": "soon"
    # leaves an event without a time (skipped), and the four non-objects are skipped
    assert len(t.device) == 33
    assert sorted(t.device.correlation)[0] == -1
    assert t.meta.skipped["missing or invalid timestamp"] == 1
    assert t.meta.skipped["malformed event (not an object, or unrepairable fields)"] == 4
    (w,) = [w for w in t.meta.warnings if w.startswith("fields of the wrong type")]
    assert "name: number -> string" in w and "args: dropped" in w and "ts: dropped" in w


def _truncate_uncompressed(tmp_path: Path, frac: float) -> tuple[Path, int]:
    b = _good()
    full = b.write(tmp_path, "full.json")
    data = full.read_bytes()
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: int(len(data) * frac)])
    return cut, len(b.events)


def test_truncated_uncompressed_trace_is_salvaged(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    cut, total = _truncate_uncompressed(tmp_path, 0.6)
    t = stepscope.load(str(cut), cache=False)
    assert 0 < t.meta.events < total
    assert any("truncated" in w for w in t.meta.warnings)
    code = main(["report", "--no-cache", str(cut)])
    out, err = capsys.readouterr()
    assert code in (0, 2)
    if code == 0:
        assert "truncated" in (out + err).lower()
    else:
        assert str(cut) in err and len(err.strip().splitlines()) == 1


def test_truncated_inside_the_header_is_an_error(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    full = _good().write(tmp_path, "full.json").read_bytes()
    p = tmp_path / "head.json"
    p.write_bytes(full[:30])
    _assert_one_line_error(p, capsys)


def test_compact_json_layout_still_reads(tmp_path: Path) -> None:
    b = _good()
    t1 = stepscope.load(str(b.write(tmp_path, "a.json", kineto_layout=False)), cache=False)
    t2 = stepscope.load(str(b.write(tmp_path, "b.json")), cache=False)
    assert t1.strings == t2.strings and len(t1.device) == len(t2.device) == 30


def test_keys_after_the_event_array_are_read(tmp_path: Path) -> None:
    b = _good()
    b.distributed = {"rank": 3, "world_size": 8, "backend": "nccl"}
    doc = b.document()
    events = doc.pop("traceEvents")
    dist = doc.pop("distributedInfo")
    body = ",\n".join("  " + json.dumps(e) for e in events)
    text = (json.dumps(doc)[:-1] + ',\n  "traceEvents": [\n' + body + "\n  ],\n"
            + '  "distributedInfo": ' + json.dumps(dist) + ',\n  "traceName": "x.json",\n'
            + '  "nested": [[1, 2], {"a": [3]}]\n}\n')
    p = tmp_path / "tail.json"
    p.write_text(text)
    t = stepscope.load(str(p), cache=False)
    assert (t.meta.rank, t.meta.world_size) == (3, 8)
    assert len(t.device) == 30


def test_event_boundary_pattern_inside_args_does_not_break_reading(tmp_path: Path) -> None:
    # "},\n  {" inside a nested array of one event: the chunk cut heuristic must recover
    b = _good()
    body = ",\n".join("  " + json.dumps(e) for e in b.events)
    weird = ('  {"ph": "X", "cat": "cpu_op", "name": "w", "pid": 1, "tid": 1, "ts": 3, '
             '"dur": 1, "args": {"list": [{"a": 1},\n  {"b": 2}]}}')
    head = {k: v for k, v in b.document().items() if k != "traceEvents"}
    text = json.dumps(head)[:-1] + ',\n  "traceEvents": [\n' + weird + ",\n" + body + "\n]}\n"
    p = tmp_path / "weird.json"
    p.write_text(text)
    import stepscope.formats.kineto.reader as k

    old = k.CHUNK_BYTES
    k.CHUNK_BYTES = 64  # force many chunk cuts on a small file
    try:
        t = stepscope.load(str(p), cache=False)
    finally:
        k.CHUNK_BYTES = old
    assert "w" in {t.strings[i] for i in t.host.name}
    assert len(t.device) == 30


def test_parallel_and_serial_reads_agree(tmp_path: Path) -> None:
    import numpy as np

    import stepscope.formats.kineto.reader as k
    from stepscope.formats import load_trace

    b = _good()
    for s in range(2, 40):
        with b.step(s, s * 100, 100):
            op = b.op("aten::mm", s * 100 + 1, 5)
            b.launch(op, "cudaLaunchKernel", s * 100 + 2, 1, kernel="g", k_ts=s * 100 + 3,
                     k_dur=4)
    for name in ("p.json", "p.json.gz"):
        path = str(b.write(tmp_path, name))
        old = (k.CHUNK_BYTES, k.PARALLEL_MIN_BYTES)
        k.CHUNK_BYTES, k.PARALLEL_MIN_BYTES = 2048, 0
        try:
            par = load_trace(path, use_cache=False, workers=2)
        finally:
            k.CHUNK_BYTES, k.PARALLEL_MIN_BYTES = old
        ser = load_trace(path, use_cache=False, workers=1)
        assert par.strings and set(par.strings) == set(ser.strings)
        for table in ("host", "device", "runtime"):
            a, c = getattr(par, table), getattr(ser, table)
            np.testing.assert_array_equal(a.ts, c.ts)
            np.testing.assert_array_equal([par.strings[i] for i in a.name],
                                          [ser.strings[i] for i in c.name])
