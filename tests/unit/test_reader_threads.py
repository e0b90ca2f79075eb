"""Traces read on several threads at once (the dashboard's loader) equal serial reads."""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pytest
from tests.builders import TraceBuilder

from stepscope.formats import load_trace
from stepscope.formats.kineto import reader as kineto


def _trace_file(tmp_path: Path, name: str, shape: int) -> Path:
    b = TraceBuilder()
    with b.step(1, 0, 100_000):
        for i in range(400):
            op = b.op("aten::mm", 10 + i * 200, 100, input_dims=[[shape, i + 1], [i + 1, shape]])
            b.launch(op, "cudaLaunchKernel", 20 + i * 200, 5, kernel=f"k{shape}_{i}",
                     k_ts=60 + i * 200, k_dur=50)
    return b.write(tmp_path, f"{name}.pt.trace.json.gz")


def test_concurrent_reads_equal_serial_reads(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 4096)  # many chunks: the buffer is reused
    paths = [_trace_file(tmp_path, f"t{i}", 8 * (i + 1)) for i in range(4)]
    serial = [load_trace(str(p), use_cache=False) for p in paths]
    got: dict[int, object] = {}

    def read(i: int) -> None:
        for _ in range(3):
            got[i] = load_trace(str(paths[i]), use_cache=False)

    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, want in enumerate(serial):
        have = got[i]
        assert have.strings == want.strings  # type: ignore[attr-defined]
        for col, values in want.host.columns().items():
            assert np.array_equal(values, have.host.columns()[col]), col  # type: ignore[attr-defined]


def test_the_parents_column_work_on_two_threads_equals_it_in_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Concatenating the chunks and sorting by time run on two threads for large tables
    (reader._each): the same trace, every table, every column, in the same order."""
    monkeypatch.setattr(kineto, "CHUNK_BYTES", 4096)  # many chunks to concatenate
    path = _trace_file(tmp_path, "big", 16)
    monkeypatch.setattr(kineto, "_THREADED_ROWS", 1 << 62)
    in_turn = load_trace(str(path), use_cache=False)
    monkeypatch.setattr(kineto, "_THREADED_ROWS", 0)
    monkeypatch.setattr(kineto.os, "cpu_count", lambda: 2)
    threaded = load_trace(str(path), use_cache=False)
    assert threaded.strings == in_turn.strings
    for table in ("host", "runtime", "device"):
        want, have = getattr(in_turn, table).columns(), getattr(threaded, table).columns()
        assert list(have) == list(want), table
        for col, values in want.items():
            assert np.array_equal(values, have[col], equal_nan=values.dtype.kind == "f"), (
                table, col)
