"""Property tests: whatever bytes a trace file holds, stepscope fails cleanly or reports.

``stepscope.load()`` returns a Trace or raises a StepscopeError (never anything else);
``build_report(trace)`` then never raises anything else either; the CLI exits 0 or 2, and on 2
prints one line naming the file.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import TraceBuilder, kineto_text

import stepscope
from stepscope.cli.main import main
from stepscope.errors import StepscopeError

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

HOSTILE_STRINGS = st.sampled_from([
    "<script>alert(1)</script>", "aten::mm", "void gemm<float, 128>(T*)", "", " ", "\u0000",
    "ProfilerStep#1", "ProfilerStep#x", "ProfilerStep#99999999999999999999", "cudaLaunchKernel",
    "\ud7ff\u202e", "💥", "a" * 300, '"quoted" & <tag>', "[memory]",
])
CATEGORIES = st.sampled_from([
    "cpu_op", "kernel", "cuda_runtime", "gpu_memcpy", "gpu_memset", "user_annotation",
    "gpu_user_annotation", "cuda_sync", "python_function", "ac2g", "Trace", "weird_cat", "",
    "KERNEL", "cuda_driver", "mtia_ccp_events",
])
NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70), st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1e308, -1e308, 2**63, 2**64, 1.7e15, 1e-300]),
)
WRONG = st.one_of(st.text(max_size=5), st.none(), st.booleans(),
                  st.lists(st.integers(), max_size=3),
                  st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": [value]}
    return value


ARGS = st.dictionaries(
    st.sampled_from(["External id", "external id", "correlation", "stream", "device", "grid",
                     "block", "registers per thread", "shared memory", "bytes", "Input Dims",
                     "Call stack", "Device Type", "Device Id", "Bytes", "Addr",
                     "Total Allocated", "Total Reserved", "blocks per SM",
                     "est. achieved occupancy %", "deep"]),
    st.one_of(NUMBERS, WRONG, HOSTILE_STRINGS, st.integers(0, 60).map(nested)),
    max_size=6,
)


@st.composite
def events(draw: st.DrawFn) -> Any:
    ev: dict[str, Any] = {}
    if draw(st.booleans()) or True:
        ev["ph"] = draw(st.one_of(st.sampled_from(["X", "X", "X", "i", "I", "B", "E", "s", "f",
                                                   "M"]), WRONG))
    for key, strat in (("cat", st.one_of(CATEGORIES, WRONG)),
                       ("name", st.one_of(HOSTILE_STRINGS, WRONG)),
                       ("ts", st.one_of(st.floats(0, 2e15), NUMBERS, WRONG)),
                       ("dur", st.one_of(st.floats(-10, 1e6), NUMBERS, WRONG)),
                       ("pid", st.one_of(st.integers(-5, 2**40), HOSTILE_STRINGS, WRONG)),
                       ("tid", st.one_of(st.integers(-5, 2**40), HOSTILE_STRINGS, WRONG)),
                       ("args", st.one_of(ARGS, WRONG))):
        if draw(st.integers(0, 9)) > 0:  # each field missing 10% of the time
            ev[key] = draw(strat)
    if draw(st.integers(0, 30)) == 0:
        return draw(WRONG)  # not an object at all
    return ev


def _good_events() -> list[dict[str, Any]]:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        for i in range(5):
            op = b.op(f"aten::op{i}", 1 + 10 * i, 5)
            b.launch(op, "cudaLaunchKernel", 2 + 10 * i, 1, kernel=f"k{i}", k_ts=20 + 10 * i,
                     k_dur=5)
    return b.events


def _kineto_text(evs: list[Any], head: dict[str, Any] | None = None) -> bytes:
    return kineto_text(evs, head if head is not None else {"schemaVersion": 1})


# Exceptions other than StepscopeError raised by build_report() (analyses, not the reader):
# collected as (type, innermost stepscope frame) and asserted by test_report_never_raises.
REPORT_BUGS: dict[str, bytes] = {}


def _report_site(exc: BaseException) -> str:
    tb = exc.__traceback__
    site = "?"
    while tb is not None:
        fname = tb.tb_frame.f_code.co_filename
        if "/stepscope/" in fname:
            site = f"{fname.split('/src/')[-1]}:{tb.tb_lineno} ({tb.tb_frame.f_code.co_name})"
        tb = tb.tb_next
    return f"{type(exc).__name__} at {site}: {str(exc)[:80]}"


def _check(data: bytes, name: str = "t.json") -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        try:
            trace = stepscope.load(str(path), cache=False)
        except StepscopeError as exc:
            msg = str(exc)
            assert str(path) in msg
            assert "\n" not in msg.strip() or len(msg.strip().splitlines()) == 1
            return
        try:
            stepscope.build_report(trace)
        except StepscopeError:
            pass
        except Exception as exc:
            REPORT_BUGS.setdefault(_report_site(exc), data)


def _check_cli(data: bytes, capsys: pytest.CaptureFixture[str], name: str = "c.json") -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        code = main(["report", "--no-cache", str(path)])
        err = capsys.readouterr().err
        assert code in (0, 2), err
        if code == 2:
            lines = err.strip().splitlines()
            assert len(lines) == 1 and str(path) in lines[0], err


@SETTINGS
@given(st.lists(events(), max_size=25), st.booleans())
def test_hostile_events(evs: list[Any], with_good: bool) -> None:
    _check(_kineto_text((_good_events() if with_good else []) + evs))


@SETTINGS
@given(st.lists(events(), max_size=10))
def test_hostile_events_compact_layout(evs: list[Any]) -> None:
    doc = {"traceEvents": _good_events() + evs, "deviceProperties": [{"id": "x"}, 5]}
    _check(json.dumps(doc).encode())


@SETTINGS
@given(st.data())
def test_truncated_traces(data: st.DataObject) -> None:
    blob = _kineto_text(_good_events())
    cut = data.draw(st.integers(0, len(blob)))
    gz = data.draw(st.booleans())
    piece = blob[:cut]
    if gz:
        comp = gzip.compress(blob)
        piece = comp[: data.draw(st.integers(0, len(comp)))]
    _check(piece, "cut.json.gz" if gz else "cut.json")


@SETTINGS
@given(st.data())
def test_byte_mutations(data: st.DataObject) -> None:
    blob = bytearray(_kineto_text(_good_events()))
    for _ in range(data.draw(st.integers(1, 6))):
        i = data.draw(st.integers(0, len(blob) - 1))
        op = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        b = data.draw(st.sampled_from([b"\xff", b"\xc3", b"\x00", b"{", b"}", b"[", b"]", b",",
                                       b'"', b"NaN", b"Infinity", b"-", b"\n  {", b"9" * 30]))
        if op == "flip":
            blob[i : i + len(b)] = b
        elif op == "insert":
            blob[i:i] = b
        else:
            del blob[i : i + len(b)]
    _check(bytes(blob))


@SETTINGS
@given(st.sampled_from([
    b'{"traceEvents": [{"ph": "X", "ts": NaN, "dur": Infinity}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "cat": "cpu_op", "name": "a", "ts": 1, '
    b'"dur": 1, "ts": 2}]}',
    b'{"traceEvents": [], "traceEvents": [{"ph": "X"}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "\xff\xfe", "ts": 1, "dur": 1}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1e400, "dur": -0.0}]}',
    b'{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": '
    + b"9" * 400 + b', "dur": 1}]}',
    b'{"traceEvents": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    b'{"traceEvents": [{"args": ' + b'{"a": ' * 3000 + b"1" + b"}" * 3000 + b"}]}",
    b"\xef\xbb\xbf" + b'{"traceEvents": [{"ph": "X"}]}',
    b'{"deviceProperties": "x", "distributedInfo": [1], "traceEvents": [{"ph": "X", '
    b'"cat": "kernel", "name": "k", "ts": 1, "dur": 1}]}',
]), st.booleans())
def test_hostile_documents(doc: bytes, gz: bool) -> None:
    _check(gzip.compress(doc) if gz else doc, "h.json")


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.lists(events(), max_size=12), st.integers(0, 3000))
def test_cli_exit_codes(capsys: pytest.CaptureFixture[str], evs: list[Any], cut: int) -> None:
    blob = _kineto_text(_good_events() + evs)
    _check_cli(blob, capsys)
    _check_cli(blob[: cut % (len(blob) + 1)], capsys, "cut.json")


def test_report_never_raises() -> None:
    """Runs last in this module: build_report() raised only StepscopeError on every example."""
    assert not REPORT_BUGS, "\n".join(f"{k}\n    example: {v[:200]!r}"
                                       for k, v in REPORT_BUGS.items())
