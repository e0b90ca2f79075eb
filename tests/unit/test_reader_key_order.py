"""The byte-range read finds the event array wherever ``traceEvents`` sits among the keys.

Kineto writes ``traceEvents`` after the header keys, but other producers (and tools that
rewrite traces) put it first or in the middle, with arrays and strings holding ``]`` and
``}`` after it. Those files used to take the whole-document path (a full decode before
any chunk); now they are split by byte ranges like Kineto's own layout, plain and gzip.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.builders import TraceBuilder

import stepscope
from stepscope.formats.kineto import reader
from stepscope.model import Trace

# after the array: an array of objects, an object, and strings holding brackets, quotes
# and backslashes (a quote after an escaped backslash ends its string)
TAIL_KEYS: dict[str, Any] = {
    "deviceProperties": [{"id": 0, "name": 'GPU "]}" \\', "totalGlobalMem": 85_000_000_000,
                          "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "traceName": "run [1]} \\\\",
    "displayTimeUnit": "ms",
}


def _events() -> list[dict[str, Any]]:
    b = TraceBuilder()
    for step in range(3):
        t0 = 1000.0 * step
        with b.step(step, t0, 900):
            op = b.op("aten::mm", t0 + 10, 200, input_dims=[[64, 64], [64, 64]])
            b.launch(op, "cudaLaunchKernel", t0 + 20, 5, kernel="sgemm]}", k_ts=t0 + 40,
                     k_dur=300)
            b.op("aten::add_", t0 + 300, 50)
    return b.events


def _document(order: str) -> dict[str, Any]:
    items = list(TAIL_KEYS.items())
    events = _events()
    if order == "first":
        return {"traceEvents": events, **dict(items)}
    if order == "middle":
        return {**dict(items[:2]), "traceEvents": events, **dict(items[2:])}
    return {**dict(items), "traceEvents": events}


def _write(tmp_path: Path, order: str, *, gz: bool, indent: int | None = 2) -> Path:
    text = json.dumps(_document(order), indent=indent).encode()
    path = tmp_path / f"{order}.pt.trace.json{'.gz' if gz else ''}"
    path.write_bytes(gzip.compress(text) if gz else text)
    return path


STRING_IDS = {"name", "pid", "tid", "input_dims", "call_stack", "input_types",
              "concrete_inputs", "input_strides"}


def _same(a: Trace, b: Trace) -> None:
    for table in ("host", "runtime", "device"):
        ca, cb = getattr(a, table).columns(), getattr(b, table).columns()
        assert ca.keys() == cb.keys()
        for k in ca:
            if k in STRING_IDS:  # ids depend on the order strings were met: compare texts
                assert [a.strings[i] if i >= 0 else None for i in ca[k].tolist()] == \
                    [b.strings[i] if i >= 0 else None for i in cb[k].tolist()], (table, k)
            else:
                assert np.array_equal(ca[k], cb[k], equal_nan=ca[k].dtype.kind == "f"), k
    assert (a.meta.rank, a.meta.world_size, a.meta.backend) == (3, 8, "nccl")
    assert (b.meta.rank, b.meta.world_size, b.meta.backend) == (3, 8, "nccl")
    assert [d.name for d in a.meta.devices] == [d.name for d in b.meta.devices]
    assert a.meta.events == b.meta.events


@pytest.fixture
def no_whole_read(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_: Any) -> Any:
        raise AssertionError("decoded the whole document")

    monkeypatch.setattr(reader, "_careful_split", refuse)


@pytest.mark.parametrize("gz", [False, True], ids=["json", "gzip"])
@pytest.mark.parametrize("order", ["first", "middle", "last"])
def test_key_order_takes_the_byte_range_path(tmp_path: Path, order: str, gz: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    expected = stepscope.load(str(_write(tmp_path, "last", gz=False, indent=None)),
                              cache=False)  # compact: the whole-document path
    monkeypatch.setattr(reader, "_careful_split", lambda *_: pytest.fail("whole read"))
    got = stepscope.load(str(_write(tmp_path, order, gz=gz)), cache=False)
    _same(got, expected)
    assert len(got.host) == 9 and len(got.device) == 3
    assert got.strings[got.device.name[0]] == "sgemm]}"
    assert got.meta.devices[0].name == 'GPU "]}" \\'


@pytest.mark.usefixtures("no_whole_read")
@pytest.mark.parametrize("order", ["first", "middle"])
def test_key_order_in_many_chunks_and_workers(tmp_path: Path, order: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks cut at event boundaries and decoded by forked workers, array not last."""
    path = _write(tmp_path, "last", gz=False)
    expected = stepscope.load(str(path), cache=False)
    monkeypatch.setattr(reader, "CHUNK_BYTES", 512)
    monkeypatch.setattr(reader, "PARALLEL_MIN_BYTES", 1024)
    text = json.dumps(_document(order), indent=None, separators=(", ", ": "))
    # Kineto's boundary between events, so that the chunks can be cut
    text = text.replace("}, {\"ph\"", "},\n  {\"ph\"")
    path = tmp_path / f"{order}-chunked.json"
    path.write_text(text)
    got = reader.read_kineto(stepscope.io.source.read_source(str(path)), workers=2)
    _same(got, expected)


@pytest.mark.parametrize(("tail", "expected"), [
    (b'{"a": 1}], "k": [1, 2]}', 8),  # a later array closes after its own opener
    (b' "x]}", {"b": "\\\\"}] , "name": "a]\\"]"}', 19),  # brackets in strings, escapes
    (b'ring continued ] } " , {}], "k": {"v": [[]]}}', 25),  # tail starts in a string
    (b"]}", 0),
    (b'{"a": 1}}, "k": 2}', -1),  # the open value is an object: not an event array
    (b'"k": [1]}', -1),  # no value is open at the start
    (b"", -1),
])
def test_closing_bracket(tail: bytes, expected: int) -> None:
    assert reader._closing_bracket(tail) == expected
