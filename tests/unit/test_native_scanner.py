"""The native event scanner (formats/kineto/scan.c) against the Python path it accelerates.

The scanner may decline any chunk, but a chunk it accepts must give exactly the result of
msgspec's typed decode + columns.build_chunk: the same string table (ids and order), the
same columns bit for bit, the same category, skip and repair counts. Generated chunks mix
Kineto's shapes with every hostile value a field can hold (wrong JSON types, integers
beyond 64 bits, escapes, non-ASCII, duplicate keys, deep nesting, syntax errors).
"""

from __future__ import annotations

import ctypes
import json
from collections.abc import Iterator
from typing import Any

import msgspec
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stepscope.formats.kineto import reader, scan
from stepscope.formats.kineto.columns import F_DEVICE, ChunkResult
from stepscope.formats.kineto.scanned import scanned_chunk

pytestmark = pytest.mark.skipif(not scan.available(),
                                reason="the native scanner is not built (no C compiler)")


def python_chunk(piece: bytes) -> ChunkResult | None:
    """The reader's Python path for one chunk; None where it raises (invalid JSON)."""
    try:
        saved, scan._LIB = scan._LIB, None
        return reader._decode_chunk(piece)
    except msgspec.DecodeError:
        return None
    finally:
        scan._LIB = saved


def assert_same(native: ChunkResult, python: ChunkResult) -> None:
    assert native.strings == python.strings
    assert list(native.tables) == list(python.tables)
    for fam, cols in python.tables.items():
        got = native.tables[fam]
        assert list(got) == list(cols), fam
        for name, want in cols.items():
            have = got[name]
            assert have.dtype == want.dtype and have.shape == want.shape, (fam, name)
            assert np.array_equal(have, want, equal_nan=want.dtype.kind == "f"), (fam, name)
    for attr in ("categories", "skipped", "repairs"):
        a, b = getattr(native, attr), getattr(python, attr)
        assert a == b and list(a) == list(b), attr
    assert native.trace_spans == python.trace_spans
    assert native.events == python.events


def check(piece: bytes) -> bool:
    """Compare both paths on ``piece``; True when the scanner accepted it."""
    native = scanned_chunk(piece)
    python = python_chunk(piece)
    if native is None:
        return False
    assert python is not None, "the scanner accepted a chunk msgspec rejects"
    assert_same(native, python)
    return True


# --- a JSON writer that can also write what json.dumps cannot (duplicates, raw tokens) ----

class Tok(str):
    """A raw JSON token, written as is."""


class Pairs(list[tuple[str, Any]]):
    """An object as key/value pairs (duplicates allowed)."""


def write(value: Any, ascii_only: bool) -> str:
    if isinstance(value, Tok):
        return str(value)
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{json.dumps(k)}: {write(v, ascii_only)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(write(v, ascii_only) for v in value) + "]"
    return json.dumps(value, ensure_ascii=ascii_only)


texts = st.one_of(
    st.sampled_from(["", "X", "i", "I", "B", "E", "cpu_op", "kernel", "cuda_runtime", "Kernel",
                     "gpu_memcpy", "gpu_user_annotation", "cuda_sync", "Trace", "python_function",
                     "user_annotation", "ac2g", "mystery", "[memory]", "aten::mm",
                     "nccl:all_reduce", "gloo:broadcast", "cudaLaunchKernel", "0x1", "12", "-1",
                     " 7 ", "0x"]),
    st.text(max_size=12),
    # beyond the scanner's 16- and 8-byte strides and its inline comparison (64 bytes)
    st.text(min_size=13, max_size=90),
)
small_ints = st.integers(-3, 40)
big_ints = st.sampled_from([2**31, 2**53, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), 2**64, 10**30])
numbers = st.one_of(
    small_ints, big_ints,
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([Tok("1E3"), Tok("-0"), Tok("0.0"), Tok("1e400"), Tok("1e-400"),
                     Tok("1.7e15"), Tok("1661203462615398.125"), Tok("5e-324")]),
)
hostile = st.one_of(
    st.none(), st.booleans(), texts, numbers,
    st.lists(small_ints, max_size=4), st.lists(texts, max_size=2),
    st.builds(lambda v: Pairs([("k", v)]), small_ints),
    st.sampled_from([Tok('"\\u0041b"'), Tok('"\\ud83d\\ude00"'), Tok('"a\\"b"'),
                     Tok('"caf\\u00e9"'), Tok('"\\/"'), Tok("[[[[1]]]]")]),
)


clean_numbers = st.one_of(
    small_ints, st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False),
    st.sampled_from([Tok("1E3"), Tok("-0"), Tok("0.0"), Tok("1.7e15"), Tok("-0.0"),
                     Tok("1661203462615398.125"), Tok("123456789.123456789e-3")]),
)


def field(kind: str, hostility: int) -> st.SearchStrategy[Any]:
    """The usual value of a field of this kind; one in ``hostility`` a hostile one (never
    when 0: a chunk the scanner should accept, to compare the values it writes)."""
    usual = {
        "str": texts, "num": clean_numbers if not hostility else numbers,
        "int": st.one_of(small_ints, st.integers(-(2**63), 2**63 - 1)),
        "int_str": st.one_of(small_ints, texts),
        "dims": st.lists(st.lists(small_ints, max_size=3), max_size=3),
        "types": st.lists(st.sampled_from(["float", "c10::BFloat16", "Scalar", ""]), max_size=3),
        "grid": st.one_of(st.lists(st.integers(-(2**40), 2**40), max_size=4), texts, st.none()),
        "str_none": st.one_of(texts, st.none()),
    }[kind]
    if not hostility:
        return usual
    return st.integers(1, hostility).flatmap(lambda k: hostile if k == 1 else usual)


EVENT_KEYS = {"ph": "str", "cat": "str", "name": "str", "ts": "num", "dur": "num",
              "pid": "int_str", "tid": "int_str"}
ARGS_KEYS = {
    "External id": "int", "external id": "int", "correlation": "int", "stream": "int_str",
    "device": "int", "blocks per SM": "num", "est. achieved occupancy %": "num", "grid": "grid",
    "block": "grid", "registers per thread": "int", "shared memory": "int", "bytes": "int_str",
    "Input Dims": "dims", "Input dims": "dims", "Input type": "types",
    "Concrete Inputs": "types", "Input Strides": "dims", "Call stack": "str_none",
    "Device Type": "int", "Device Id": "int", "Bytes": "int", "Addr": "int",
    "Total Allocated": "int", "Total Reserved": "int", "Collective name": "str_none",
    "In msg nelems": "int", "Out msg nelems": "int", "Group size": "int", "dtype": "str_none",
    "Process Group Name": "int_str", "Seq": "int_str", "In split size": "types",
    "Out split size": "types", "Process Group Ranks": "dims", "Trace name": "str",
    "unknown": "dims",
}


@st.composite
def objects(draw: st.DrawFn, keys: dict[str, str], hostility: int) -> Pairs:
    chosen = draw(st.lists(st.sampled_from(sorted(keys)), max_size=len(keys), unique=True))
    pairs = Pairs((k, draw(field(keys[k], hostility))) for k in chosen)
    if pairs and hostility and draw(st.integers(0, hostility)) == 0:
        pairs.append(pairs[0])  # a duplicate key
    return pairs


@st.composite
def events(draw: st.DrawFn, hostility: int) -> Any:
    if hostility and draw(st.integers(0, 4 * hostility)) == 0:
        return draw(hostile)  # not an object
    event = draw(objects(EVENT_KEYS, hostility))
    if "ph" not in dict(event) and draw(st.booleans()):
        event.append(("ph", "X"))
    if draw(st.integers(0, 3)):
        args = draw(st.one_of(objects(ARGS_KEYS, hostility), st.none(), st.just(Pairs())))
        event.append(("args", args))
    return event


@st.composite
def chunks(draw: st.DrawFn) -> tuple[bytes, bool]:
    """(a chunk, whether the scanner must accept it)"""
    # 0: only values the scanner takes; else one value in `hostility` is hostile
    hostility = draw(st.sampled_from([0, 0, 40, 200, 4]))
    items = draw(st.lists(events(hostility), max_size=12))
    ascii_only = draw(st.booleans())
    sep = draw(st.sampled_from([", ", ",\n  ", ","]))
    text = "[" + sep.join(write(e, ascii_only) for e in items) + "]"
    cut = draw(st.integers(0, 50))
    if hostility and cut == 0 and len(text) > 2:  # a syntax error somewhere
        at = draw(st.integers(1, len(text) - 1))
        text = text[:at] + draw(st.sampled_from(["", "}", ",", "\x01", "\\"])) + text[at + 1:]
    return text.encode("utf-8", "surrogatepass"), not hostility


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(chunks())
def test_an_accepted_chunk_gives_the_python_result(case: tuple[bytes, bool]) -> None:
    piece, clean = case
    accepted = check(piece)
    assert accepted or not clean, "the scanner declined a chunk of plain Kineto values"


def kineto_events(n: int) -> Iterator[dict[str, Any]]:
    """Events as PyTorch writes them: host ops, launches, kernels, memcpys, a memory record."""
    for i in range(n):
        yield {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 11, "tid": 11,
               "ts": 1661203462615398.25 + i, "dur": 5,
               "args": {"External id": i, "Input Dims": [[512, 64], [64, 64]],
                        "Input type": ["float", "float"], "Call stack": "", "Sequence number": i}}
        yield {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 11,
               "tid": 11, "ts": 1661203462615399 + i, "dur": 3,
               "args": {"correlation": 100 + i, "external id": i, "cbid": 211}}
        yield {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "pid": 0,
               "tid": 7, "ts": 1661203462615401.5 + i, "dur": 20.125,
               "args": {"device": 0, "stream": 7, "correlation": 100 + i, "grid": [32, 1, 1],
                        "block": [256, 1, 1], "registers per thread": 90,
                        "blocks per SM": 0.4, "est. achieved occupancy %": 12}}
    yield {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
           "tid": 7, "ts": 1661203462615300, "dur": 2, "args": {"bytes": "4096", "stream": "0x7"}}
    yield {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 11, "tid": 11,
           "ts": 1661203462615300, "s": "t", "args": {"Total Reserved": 2097152, "Bytes": 512,
                                                    "Addr": 94, "Device Type": 1, "Device Id": 0,
                                                    "Total Allocated": 512}}
    yield {"ph": "X", "cat": "user_annotation", "name": "nccl:all_reduce", "pid": "11",
           "tid": "stream 7", "ts": 1661203462615300, "dur": 8,
           "args": {"In msg nelems": 1024, "Out msg nelems": 1024, "Group size": 2,
                    "dtype": "Float", "Process Group Name": "0", "Seq": "3",
                    "In split size": "[]", "Process Group Ranks": "[0, 1]"}}


def test_a_kineto_chunk_is_scanned_and_matches() -> None:
    body = ",\n  ".join(json.dumps(e) for e in kineto_events(200))
    piece = ("[" + body + "]").encode()
    assert check(piece)
    native = scanned_chunk(piece)
    assert native is not None and len(native.tables[0]["name"]) == 201  # + the nccl range
    assert native.repairs == {"args.bytes: string -> integer": 1}


# (the special's JSON text, whether the scanner takes it): escapes, UTF-8 of 2, 3 and 4
# bytes and DEL it takes; a raw control byte, an unknown escape and bad UTF-8 it declines
SPECIALS = [(b'\\"', True), (b"\\\\", True), (b"\\n", True), (b"\\u00e9", True),
            ("\u00e9".encode(), True), ("\u20ac".encode(), True), ("\U0001f600".encode(), True),
            (b"\x7f", True), (b"\x01", False), (b"\\q", False), (b"\xff", False)]


@pytest.mark.parametrize(("special", "taken"), SPECIALS)
def test_a_special_byte_at_every_offset_of_a_long_string(special: bytes, taken: bool) -> None:
    """The string scan's strides (16 bytes, then 8, then one) stop at a quote, a backslash,
    a control or a non-ASCII byte wherever it lies; repeated names hit the interning's
    last-value check, a changed one misses it."""
    for at in range(70):
        name = b"k" * at + special + b"x" * (69 - at)
        names = [name, name, b"k" * 70, name]
        piece = b"[" + b", ".join(
            b'{"ph": "X", "cat": "kernel", "name": "' + n + b'", "pid": 1, "tid": 1, "ts": '
            + str(i).encode() + b', "dur": 1}' for i, n in enumerate(names)) + b"]"
        assert check(piece) == taken, (special, at)


@pytest.mark.parametrize("piece", [
    b'[{"ph": "X", "ts": NaN}]',  # not JSON
    b'[{"ph": "X", "ts": "5"}]',  # a string where a number goes: Python repairs it
    b'[{"ph": "X", "pid": 1.5}]',  # a float for an int
    b'[{"ph": "X", "pid": 9223372036854775808}]',  # beyond int64
    b'[{"ph": "X", "ph": "X"}]',  # a duplicate key
    b'[{"p\\u0068": "X"}]',  # an escaped key
    b'[{"ph": "\\ud800"}]',  # a lone surrogate
    b'[{"ph": "\xff"}]',  # not UTF-8
    b'[{"ph": "X"}, 1]',  # an element that is not an object
    b'[{"ph": "X"}] x',  # trailing bytes
    b'[{"ph": "X", "args": ' + b"[" * 70 + b"]" * 70 + b"}]",  # nesting beyond 64
])
def test_the_scanner_declines_what_it_is_not_sure_of(piece: bytes) -> None:
    assert scan.scan(piece) is None


def test_columns_grown_in_the_middle_of_a_chunk_keep_their_events() -> None:
    """Short events overflow the columns reserved for a chunk (len / 256 events): they
    grow twice mid-chunk, every column's events carried over."""
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "pid": 1, "tid": i % 3,
               "ts": i, "dur": 1, "args": {"stream": 7, "grid": [i, 1, 1]}} if i % 5 == 0
              else {"ph": "X", "ts": i} for i in range(20_000)]
    piece = json.dumps(events, separators=(",", ":")).encode()
    assert len(piece) // 256 < 4096  # fewer reserved than the events: growth mid-chunk
    assert check(piece)


def test_returned_columns_own_their_memory() -> None:
    """Columns are copies, never views of the scanner's reused buffers: the next chunk's
    scan leaves them as they were, and none is backed by the scanner's memory."""
    body = ",\n  ".join(json.dumps(e) for e in kineto_events(50))
    first = scanned_chunk(("[" + body + "]").encode())
    assert first is not None
    kept = {k: v.copy() for k, v in first.tables[F_DEVICE].items()}
    scanned_chunk(b'[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]')
    for name, values in first.tables[F_DEVICE].items():
        assert np.array_equal(values, kept[name], equal_nan=values.dtype.kind == "f"), name
        assert not isinstance(values.base, ctypes.Array), name  # scan._view's backing
