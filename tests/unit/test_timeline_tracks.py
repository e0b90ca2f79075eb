"""Timeline back end of issue 24: Python frames on their own row, stacks and launching
operators, search hits, counter tracks (memory, monitor samples) and the full-fidelity
window export read back by stepscope's own reader."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from tests.builders import TraceBuilder
from tests.conftest import shared_trace

from stepscope.formats import load_trace
from stepscope.report.counters import CounterTracks, bin_max, read_monitor
from stepscope.report.lookup import context, enclosing, launching_op, search_hits
from stepscope.report.timeline import T_DEVICE, TimelineIndex
from stepscope.report.window_export import export_window

FRAMES = 30
BASE = 1_700_000_000_000_000_000  # baseTimeNanoseconds


def _deep(tmp_path: Path) -> Path:
    """30 nested Python frames over ProfilerStep > aten::linear > aten::mm > launch > kernel,
    and [memory] records; Kineto times relative to baseTimeNanoseconds."""
    b = TraceBuilder()
    for k in range(FRAMES):
        b.op(f"model.py({k + 1}): f{k}", 10 + k, 1000 - 2 * k, cat="python_function")
    with b.step(0, 50, 800):
        lin = b.op("aten::linear", 100, 400, input_dims=[[8, 16], [32, 16]])
        mm = b.op("aten::mm", 120, 300, input_dims=[[8, 16], [16, 32]],
                  input_types=["float", "float"])
        b.launch(mm, "cudaLaunchKernel", 150, 20, kernel="sm90_gemm", k_ts=200, k_dur=100,
                 grid=[4, 2, 1], block=[128, 1, 1], **{"registers per thread": 96,
                                                       "shared memory": 4096})
        assert lin
    b.memory(60, 1024, total=1024)
    b.memory(400, 4096, total=5120)
    b.memory(700, -1024, total=4096)
    path = b.write(tmp_path)
    doc = msgspec.json.decode(__import__("gzip").decompress(path.read_bytes()))
    doc["baseTimeNanoseconds"] = BASE
    path.write_bytes(__import__("gzip").compress(msgspec.json.encode(doc)))
    return path


def test_python_frames_get_their_own_row(tmp_path: Path) -> None:
    tl = TimelineIndex(load_trace(str(_deep(tmp_path)), use_cache=False))
    rows = tl.meta()["rows"]
    assert [(r["kind"], r["depths"]) for r in rows[:2]] == [("python", FRAMES), ("thread", 4)]
    assert rows[0]["of"] == rows[1]["id"] and rows[0]["label"].endswith(" Python")
    name = {tl.trace.name(int(tl.name[i])): i for i in range(tl.n)}
    # operators and the launch keep small depths on the thread's row
    assert [int(tl.depth[name[n]]) for n in ("ProfilerStep#0", "aten::linear", "aten::mm",
                                             "cudaLaunchKernel")] == [0, 1, 2, 3]
    assert int(tl.row[name["aten::mm"]]) == 1


def test_stack_launching_operator_and_search(tmp_path: Path) -> None:
    tl = TimelineIndex(load_trace(str(_deep(tmp_path)), use_cache=False))
    name = {tl.trace.name(int(tl.name[i])): i for i in range(tl.n)}
    mm, kernel = name["aten::mm"], name["sm90_gemm"]
    around = [tl.trace.name(int(tl.name[i])) for i in enclosing(tl, mm)]
    assert around == [f"model.py({k + 1}): f{k}" for k in range(FRAMES)] + [
        "ProfilerStep#0", "aten::linear"]
    ctx = context(tl, kernel)
    assert ctx["launched_by"]["name"] == "aten::mm" and ctx["launched_by"]["id"] == mm
    assert ctx["launch"]["name"] == "cudaLaunchKernel" and ctx["launch"]["depth"] == 3
    assert ctx["stack"] == []  # a kernel's stream encloses nothing
    assert sum(s["python"] for s in context(tl, mm)["stack"]) == FRAMES
    assert launching_op(tl, name["aten::linear"]) is None
    hits = search_hits(tl, "ATEN::")
    assert hits["count"] == 2
    assert [hits["strings"][str(n)] for n in hits["hits"]["name"]] == ["aten::linear",
                                                                        "aten::mm"]
    assert hits["hits"]["ts"] == sorted(hits["hits"]["ts"])


def test_bin_max_keeps_peaks_and_held_values() -> None:
    ts = np.array([10, 20, 30, 60], np.int64)
    v = np.array([1.0, 5.0, 2.0, 7.0])
    got = bin_max(ts, v, np.array([0, 10, 25, 40, 50, 70, 80], np.int64))
    np.testing.assert_array_equal(got, [np.nan, 5, 5, 2, 7, 7])


def test_memory_and_monitor_tracks(tmp_path: Path) -> None:
    path = _deep(tmp_path)
    trace = load_trace(str(path), use_cache=False)
    assert read_monitor(str(path)) is None
    # monitor samples every 200 µs of wall clock, mid-bin from the trace's first event on
    t0 = BASE + int(trace.host.ts.min())
    wall = [(t0 + k * 200_000 + 100_000) / 1e9 for k in range(6)]
    pq.write_table(pa.table({"t": [k * 0.2 for k in range(6)], "wall": wall,
                             "cpu": [10.0, 20, 30, 40, 50, 60],
                             "gpu_util": [[0.0], [50.0], [100.0], [None], [25.0], [0.0]]}),
                   tmp_path / "monitor.parquet")
    assert read_monitor(str(path)) is None  # samples without monitor.json: not a monitor output
    (tmp_path / "monitor.json").write_text('{"schema": "stepscope.monitor/1"}')
    tracks = CounterTracks(trace, read_monitor(str(path)))
    meta = {m["id"]: m for m in tracks.meta()}
    assert set(meta) == {"mem:1:0:allocated", "mem:1:0:reserved", "monitor:cpu",
                         "monitor:gpu_util:0"}
    assert meta["mem:1:0:allocated"]["max"] == 5120 and meta["mem:1:0:allocated"]["unit"] == "B"
    assert meta["monitor:gpu_util:0"]["label"] == "GPU 0 busy (NVML)"
    assert not tracks.notes
    # 5 bins of 200 µs from the first event: samples land one per bin (wall clock aligned)
    got = {q["id"]: q["values"] for q in tracks.query(t0 - BASE, t0 - BASE + 1_000_000, 5)}
    assert got["monitor:cpu"] == [10.0, 20.0, 30.0, 40.0, 50.0]
    assert got["monitor:gpu_util:0"] == [0.0, 50.0, 100.0, 100.0, 25.0]  # a gap holds
    # memory: 1 KiB from 60 µs, 5 KiB at 400 µs, 4 KiB at 700 µs (bins from 10 µs; the
    # largest value held in each bin)
    assert got["mem:1:0:allocated"] == [1024.0, 5120.0, 5120.0, 5120.0, 4096.0]
    # samples from another run (a day later) are left out, with a note
    pq.write_table(pa.table({"wall": [w + 86_400 for w in wall], "cpu": [1.0] * 6}),
                   tmp_path / "monitor.parquet")
    later = CounterTracks(trace, read_monitor(str(path)))
    assert [t.source for t in later.tracks] == ["memory", "memory"] and later.notes


def _same_tables(a: object, b: object, rows_a: np.ndarray, rows_b: np.ndarray,
                 names: tuple[tuple[str, ...], ...]) -> None:
    ta, tb = a, b
    for col, arr in ta.columns().items():  # type: ignore[attr-defined]
        other = tb.columns()[col]  # type: ignore[attr-defined]
        x, y = arr[rows_a], other[rows_b]
        if col in names[0]:
            x = [names[1][int(v)] if v >= 0 else "" for v in x]  # type: ignore[index]
            y = [names[2][int(v)] if v >= 0 else "" for v in y]  # type: ignore[index]
            assert x == y, col
        else:
            assert np.array_equal(x, y, equal_nan=True), col


STRING_COLS = ("name", "pid", "tid", "input_dims", "call_stack", "input_types",
               "concrete_inputs", "input_strides")


@pytest.mark.parametrize("real", [False, True], ids=["synthetic", "h100"])
def test_export_reads_back_with_the_same_events_and_args(tmp_path: Path, real: bool) -> None:
    src = shared_trace("outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz") \
        if real else _deep(tmp_path)
    tr = load_trace(str(src), use_cache=False)
    tl = TimelineIndex(tr)
    span = tl.finish - tl.origin
    start, end = (span // 3, 2 * span // 3) if real else (0, span)
    doc = export_window(tl, start, end, CounterTracks(tr))
    out = tmp_path / "window.json"
    out.write_bytes(msgspec.json.encode(doc))
    back = load_trace(str(out), use_cache=False)
    assert back.meta.base_time_ns == tr.meta.base_time_ns
    assert back.meta.devices == tr.meta.devices
    t0, t1 = tl.origin + start, tl.origin + end
    for table in ("host", "runtime", "device", "gpu_annotations"):
        a, b = getattr(tr, table), getattr(back, table)
        rows = np.flatnonzero((a.ts < t1) & (a.ts + a.dur > t0))
        assert len(rows) == len(b), table
        assert len(b) > 0 or table == "gpu_annotations"
        _same_tables(a, b, rows, np.arange(len(b)), (STRING_COLS, tr.strings, back.strings))
    m = tr.memory
    rows = np.flatnonzero((m.ts >= t0) & (m.ts < t1))
    assert len(rows) == len(back.memory) > 0
    _same_tables(m, back.memory, rows, np.arange(len(back.memory)),
                 (STRING_COLS, tr.strings, back.strings))
    # flows: one ac2g pair per exported launch whose kernel is exported too
    flows = [e for e in doc["traceEvents"] if e["ph"] in ("s", "f")]
    linked = int((tl.partner[tl.window(start, end)] >= 0).sum()
                 - ((tl.table[tl.window(start, end)] == T_DEVICE)
                    & (tl.partner[tl.window(start, end)] >= 0)).sum())
    assert 0 < len(flows) // 2 <= linked
    assert any(e["ph"] == "C" for e in doc["traceEvents"])  # memory totals as counters
    if not real:
        kernel = next(e for e in doc["traceEvents"] if e.get("cat") == "kernel")
        assert kernel["args"]["grid"] == [4, 2, 1] and kernel["args"]["registers per thread"] == 96
        assert kernel["pid"] == 0 and kernel["tid"] == 7


def test_api_answers_tracks_stack_hits_and_export(tmp_path: Path) -> None:
    pytest.importorskip("httpx")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    from tests.unit.test_server_api import wait_ready

    from stepscope.server.app import ViewConfig, create_app

    path = _deep(tmp_path)
    trace = path.name
    with TestClient(create_app(ViewConfig(root=str(tmp_path), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as client:
        wait_ready(client, trace)
        meta = client.get("/api/timeline/meta", params={"trace": trace}).json()
        assert [t["id"] for t in meta["tracks"]] == ["mem:1:0:allocated", "mem:1:0:reserved"]
        assert [r["kind"] for r in meta["rows"]] == ["python", "thread", "stream"]
        win = client.get("/api/timeline", params={"trace": trace, "start": 0,
                                                  "end": meta["end"], "width": 200}).json()
        assert [len(t["values"]) for t in win["tracks"]] == [100, 100]
        assert max(v for v in win["tracks"][0]["values"] if v is not None) == 5120
        found = client.get("/api/search", params={"trace": trace, "q": "gemm"}).json()
        assert found["count"] == 1 and found["hits"]["row"] == [2]
        kernel = found["hits"]["id"][0]
        ev = client.get("/api/event", params={"trace": trace, "id": kernel}).json()
        assert ev["launched_by"]["name"] == "aten::mm" and ev["launch"]["depth"] == 3
        launch = client.get("/api/event", params={"trace": trace,
                                                  "id": ev["launch"]["id"]}).json()
        assert len(launch["stack"]) == FRAMES + 3  # frames, step, linear, mm
        got = client.get("/api/export", params={"trace": trace, "start": 0,
                                                "end": meta["end"]})
        out = tmp_path / "export" / "w.json"
        out.parent.mkdir()
        out.write_bytes(got.content)
        back = load_trace(str(out), use_cache=False)
        assert len(back.host) == FRAMES + 3 and len(back.device) == 1
