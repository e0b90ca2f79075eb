"""The fuzz campaign as a test: mutated inputs for every reader, through the CLI in-process.

Each reader gets a valid seed file (synthetic, built like the producer writes it) and two
kinds of mutation: byte-level (flip, insert, delete, duplicate, truncate) and structural
(a JSON value replaced by a hostile one, an SQLite cell/table changed, a CSV row made
ragged). For every case ``stepscope.cli.main.main`` must:

- return 0, or 2 with exactly one line on stderr naming the file;
- never report an internal error (an exception we did not anticipate);
- print no Python warning (numpy's RuntimeWarnings would reach the user's terminal beside
  the report, naming a line of stepscope's code);
- stay under ``MEMORY_CEILING`` of Python-traced allocations (tracemalloc peak; numpy
  buffers are traced too). The seeds are a few KiB, so any case near the ceiling is a
  runaway (an allocation sized from a mutated count), not a big input.

Budget: ``STEPSCOPE_FUZZ_EXAMPLES`` cases per test (default 100, fixed seed: the same cases on
every run); set it to e.g. 2000 for a campaign, and ``STEPSCOPE_FUZZ_DUMP=FILE`` to keep the
input of a failing case (hypothesis prints it too, but shrunk and as a Python literal).
"""

from __future__ import annotations

import contextlib
import copy
import gzip
import io
import json
import os
import pickle
import sqlite3
import tempfile
import tracemalloc
import warnings
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import TraceBuilder, kineto_text
from tests.nsys_builders import NsysBuilder
from tests.trt_builders import layer_info_text, log_text, profile_text, times_text
from tests.unit.test_memory_files import built_snapshot

from stepscope.cli.main import main

EXAMPLES = int(os.environ.get("STEPSCOPE_FUZZ_EXAMPLES", "100"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# the categories Python does not print unless asked (its default warning filters)
SILENT_BY_DEFAULT = (DeprecationWarning, PendingDeprecationWarning, ImportWarning,
                     ResourceWarning)
MEMORY_CEILING = 256 << 20  # bytes of traced allocations per case, for inputs of a few KiB
NCU_REAL = Path(__file__).resolve().parent.parent / "data" / "ncu" / \
    "superbench_cublaslt_ncu.log"


# --- seeds -------------------------------------------------------------------------------

@cache
def kineto_seed() -> bytes:
    b = TraceBuilder()
    b.distributed = {"backend": "nccl", "rank": 0, "world_size": 2}
    with b.step(1, 0, 100):
        for i in range(4):
            op = b.op(f"aten::op{i}", 1 + 10 * i, 5, input_dims=[[4, 4]],
                      stack="train.py(3): step")
            b.launch(op, "cudaLaunchKernel", 2 + 10 * i, 1, kernel=f"k{i}", k_ts=20 + 10 * i,
                     k_dur=5, grid=[4, 1, 1], block=[64, 1, 1])
    head = {"schemaVersion": 1, "distributedInfo": b.distributed,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100", "totalGlobalMem": 85e9,
                                  "computeMajor": 9, "computeMinor": 0, "numSms": 132,
                                  "maxThreadsPerBlock": 1024, "regsPerBlock": 65536,
                                  "sharedMemPerBlock": 49152, "warpSize": 32}]}
    return kineto_text(b.events, head)


@cache
def nsys_seed() -> bytes:
    b = NsysBuilder()
    b.nvtx("ProfilerStep#1", 0, 10_000)
    b.launch("cudaLaunchKernel_v7000", 200, 20, kernel="sgemm_kernel", k_ts=300, k_dur=1_000,
             grid=(132, 1, 1), block=(256, 1, 1), regs=64)
    b.launch("cuLaunchKernel", 400, 20, kernel="_Z6kernelPfi", k_ts=1_400, k_dur=500,
             mangled="_Z6kernelPfi")
    b.copy("cudaMemcpyAsync_v3020", 2_000, 800, c_ts=2_100, c_dur=600, src=0, dst=2,
           nbytes=1 << 20)
    corr = b.api("cudaStreamSynchronize_v3020", 3_200, 400)
    b.sync(3_300, 200, corr=corr)
    b.osrt("pthread_cond_wait", 4_000, 1_500)
    with tempfile.TemporaryDirectory() as d:
        return b.write(Path(d) / "s.sqlite").read_bytes()


NCU_RAW = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","gpu__time_duration.sum",'
    '"sm__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"launch__registers_per_thread"\n'
    '"","","","","","","","","","","","usecond","%","register/thread"\n'
    '"0","1","train","h","void ampere_sgemm<float>(int, float*)","1","7","(256, 1, 1)",'
    '"(1,024, 1, 1)","0","8.0","1,234.5","71.2","128"\n'
    '"1","1","train","h","elementwise_kernel","1","7","(128, 1, 1)","(80, 1, 1)","0","8.0",'
    '"3.5","5.1","16"\n'
)

TRT_PROFILE = profile_text([("conv1", 0.5), ("relu1", 0.1), ("gemm", 1.2)])
TRT_LAYERS = layer_info_text([{"name": "conv1", "tactic": "sm80_xmma_fprop",
                               "inputs": [("input", "Row major linear FP16 format")],
                               "outputs": [("c1", "Row major linear FP16 format")]}])
TRT_TIMES = times_text([1.0, 1.1, 0.9])
TRT_LOG = log_text(profile_rows=[("conv1", 0.5), ("gemm", 1.2)], warnings=["w1"])


@cache
def seeds() -> dict[str, tuple[str, str, bytes]]:
    """reader -> (command, file name, bytes)."""
    timeline = [[-1, 1, 100, 0], [1000, 2, 30, 4], [2000, 3, -30, 4], [2000, 3, 30, 5]]
    return {
        "kineto": ("report", "t.pt.trace.json", kineto_seed()),
        "kineto_gz": ("report", "t.pt.trace.json.gz", gzip.compress(kineto_seed(), mtime=0)),
        "nsys": ("report", "s.sqlite", nsys_seed()),
        "ncu": ("report", "k.csv", NCU_RAW.encode()),
        "ncu_real": ("report", "k.log", NCU_REAL.read_bytes()),
        "trt_profile": ("report", "m.profile.json", TRT_PROFILE.encode()),
        "trt_layers": ("report", "m.graph.json", TRT_LAYERS.encode()),
        "trt_times": ("report", "m.timing.json", TRT_TIMES.encode()),
        "trt_log": ("report", "m.log", TRT_LOG.encode()),
        "snapshot": ("memory", "snap.pickle", pickle.dumps(built_snapshot(oom=True),
                                                           protocol=4)),
        "timeline": ("memory", "t.raw.json", json.dumps(timeline).encode()),
    }


# --- the check ---------------------------------------------------------------------------

def run_cli(command: str, name: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        args = [command, str(path)] + (["--no-cache"] if command == "report" else [])
        out, err = io.StringIO(), io.StringIO()
        tracemalloc.start()
        try:
            with (contextlib.redirect_stdout(out), contextlib.redirect_stderr(err),
                  warnings.catch_warnings(record=True) as caught):
                warnings.simplefilter("always")
                code = main(args)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        text = err.getvalue()
        shown = [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})"
                 for w in caught if not issubclass(w.category, SILENT_BY_DEFAULT)]
        if os.environ.get("STEPSCOPE_FUZZ_DUMP") and ("internal error" in text or code not in (0, 2)
                                            or peak >= MEMORY_CEILING or shown):
            Path(os.environ["STEPSCOPE_FUZZ_DUMP"]).write_bytes(data)
        assert "internal error" not in text, text
        # a Python warning would reach the user's terminal beside the report
        assert not shown, shown
        assert code in (0, 2), (code, text)
        if code == 2:
            lines = text.strip().splitlines()
            assert len(lines) == 1 and path.name in lines[0], text
        assert peak < MEMORY_CEILING, f"{peak >> 20} MiB traced for a {len(data)}-byte input"
        assert sorted(p.name for p in Path(d).iterdir()) == [name], "wrote next to the input"


# --- mutations ---------------------------------------------------------------------------

BYTES = st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"{", b"}", b"[", b"]",
                         b",", b'"', b"NaN", b"-", b"\n", b"9" * 25, b"1e999", b"\x80\x04",
                         b"\\u0000", b"\\ud800", b'""', b"null"])


@st.composite
def byte_mutations(draw: st.DrawFn, blob: bytes) -> bytes:
    data = bytearray(blob)
    for _ in range(draw(st.integers(1, 5))):
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        op = draw(st.sampled_from(["flip", "insert", "delete", "bit", "dup", "cut"]))
        piece = draw(BYTES)
        if op == "flip":
            data[i : i + len(piece)] = piece
        elif op == "insert":
            data[i:i] = piece
        elif op == "delete":
            del data[i : i + draw(st.integers(1, 64))]
        elif op == "bit":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "dup":
            j = min(len(data), i + draw(st.integers(1, 200)))
            data[j:j] = data[i:j]
        else:
            del data[i:]
    return bytes(data)


HOSTILE = st.one_of(
    st.sampled_from([None, True, "", "x", "\udcff", "NaN", -1, 0, 2**31, 2**31 - 1, 2**63 - 1,
                     -(2**63), 2**64, 1e308, -1e308, 0.5, [], {}, [1, "a"], {"a": None},
                     "9" * 40, "<script>", "\x00"]),
    st.integers(), st.floats(allow_nan=False), st.text(max_size=8),
)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:40]):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any, op: str) -> Any:
    if not path:
        return value
    node = doc
    for k in path[:-1]:
        node = node[k]
    if op == "delete":
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return doc


@st.composite
def value_mutations(draw: st.DrawFn, doc: Any) -> Any:
    doc = json.loads(json.dumps(doc)) if not isinstance(doc, bytes) else doc
    for _ in range(draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["set", "set", "delete"])) if path else "set"
        # a copy: HOSTILE's lists and dicts are shared between draws, and a later mutation
        # of this example may write inside the one set here (hypothesis then sees the
        # strategy change under it: FlakyStrategyDefinition)
        doc = _set(doc, path, copy.deepcopy(draw(HOSTILE)), op)
    return doc


def _json_bytes(doc: Any) -> bytes:
    return json.dumps(doc, allow_nan=True).encode("utf-8", "surrogatepass")


SQL_VALUES = st.sampled_from([None, "", "text", "\udcff", b"\xff\xfe", -1, 0, 2**31,
                              2**31 - 1, 2**62, 2**63 - 1, -(2**63), 1.5, 1e300, float("nan")])


@st.composite
def sqlite_mutations(draw: st.DrawFn) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "m.sqlite"
        path.write_bytes(nsys_seed())
        con = sqlite3.connect(path)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for _ in range(draw(st.integers(1, 3))):
            table = draw(st.sampled_from(tables))
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{table}")')]
            op = draw(st.sampled_from(["cell", "cell", "cell", "column", "empty", "drop"]))
            if op in ("cell", "column"):
                col = draw(st.sampled_from(cols))
                value = draw(SQL_VALUES)
                if isinstance(value, str):
                    value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace") \
                        if value != "\udcff" else b"\xed\xb3\xbf"
                where = "" if op == "column" else \
                    f" WHERE rowid = (SELECT min(rowid) FROM \"{table}\")"
                with contextlib.suppress(sqlite3.Error):  # e.g. text into a rowid key
                    con.execute(f'UPDATE "{table}" SET "{col}" = ?{where}', (value,))
            elif op == "empty":
                con.execute(f'DELETE FROM "{table}"')
            else:
                con.execute(f'DROP TABLE "{table}"')
                tables.remove(table)
                if not tables:
                    break
        con.commit()
        con.close()
        data = path.read_bytes()
    if draw(st.integers(0, 3)) == 0:  # a byte in the schema page (sqlite_master)
        data = bytearray(data)
        i = draw(st.integers(100, min(len(data), 4096) - 1))
        data[i] = draw(st.integers(0, 255))
        data = bytes(data)
    return data


@st.composite
def csv_mutations(draw: st.DrawFn, text: str) -> bytes:
    lines = text.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        fields = lines[i].split('","')
        op = draw(st.sampled_from(["drop", "add", "value", "cut", "dup"]))
        if op == "drop" and len(fields) > 1:
            del fields[draw(st.integers(0, len(fields) - 1))]
        elif op == "add":
            fields.insert(draw(st.integers(0, len(fields))), "extra")
        elif op == "value":
            fields[draw(st.integers(0, len(fields) - 1))] = draw(st.sampled_from(
                ["", "n/a", "x", "-1", "1e999", "nan", "9" * 30, '"', "1,2,3", "(1, 2"]))
        elif op == "cut":
            fields = fields[: draw(st.integers(0, len(fields)))]
        else:
            lines.insert(i, lines[i])
        lines[i] = '","'.join(fields)
    return ("\n".join(lines) + "\n").encode()


# --- the tests ---------------------------------------------------------------------------

READERS = list(seeds())


@pytest.mark.parametrize("reader", READERS)
def test_seeds_are_read(reader: str) -> None:
    command, name, data = seeds()[reader]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / name
        path.write_bytes(data)
        out, err = io.StringIO(), io.StringIO()
        args = [command, str(path)] + (["--no-cache"] if command == "report" else [])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            assert main(args) == 0, err.getvalue()


@pytest.mark.parametrize("reader", READERS)
def test_byte_mutations(reader: str) -> None:
    command, name, blob = seeds()[reader]

    @SETTINGS
    @given(byte_mutations(blob))
    def check(data: bytes) -> None:
        run_cli(command, name, data)

    check()


JSON_SEEDS: dict[str, Callable[[], Any]] = {
    "kineto": lambda: json.loads(kineto_seed()),
    "trt_profile": lambda: json.loads(TRT_PROFILE),
    "trt_times": lambda: json.loads(TRT_TIMES),
    "timeline": lambda: json.loads(seeds()["timeline"][2]),
}


@pytest.mark.parametrize("reader", list(JSON_SEEDS))
def test_value_mutations(reader: str) -> None:
    command, name, _ = seeds()[reader]
    doc = JSON_SEEDS[reader]()

    @SETTINGS
    @given(value_mutations(doc))
    def check(mutated: Any) -> None:
        run_cli(command, name, _json_bytes(mutated))

    check()


@SETTINGS
@given(value_mutations(built_snapshot(oom=True)))
def test_snapshot_value_mutations(mutated: Any) -> None:
    run_cli("memory", "snap.pickle", pickle.dumps(mutated, protocol=4))


@SETTINGS
@given(sqlite_mutations())
def test_nsys_sqlite_mutations(data: bytes) -> None:
    run_cli("report", "s.sqlite", data)


@SETTINGS
@given(st.one_of(csv_mutations(NCU_RAW), csv_mutations(NCU_REAL.read_text())))
def test_ncu_csv_mutations(data: bytes) -> None:
    run_cli("report", "k.csv", data)


@SETTINGS
@given(st.one_of(csv_mutations(TRT_LOG), csv_mutations(TRT_LAYERS)))
def test_trtexec_text_mutations(data: bytes) -> None:
    run_cli("report", "m.log", data)
