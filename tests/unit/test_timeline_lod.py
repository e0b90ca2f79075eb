"""The timeline's level of detail at scale: the duration-level index and its pyramid answer
as the event-by-event scan did, from the Arrow cache as from memory, and the server keeps
columns, not per-event Python objects (issue 24, item 3)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import shared_trace

from stepscope.formats import load_trace
from stepscope.formats.kineto.reader import READER_VERSION, read_kineto
from stepscope.io import cache
from stepscope.io.source import read_source
from stepscope.model.trace import Trace
from stepscope.report.lod import Lod
from stepscope.report.timeline import TimelineIndex

REAL = [
    "outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
    "outside/tracelens-vllm-mi300-graph-capture/"
    "graph_capture_rank_0.1773709742341309550.pt.trace.json.gz",
    "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz",
]


def _windows(ix: TimelineIndex, n: int = 12) -> list[tuple[int, int, int]]:
    span = ix.finish - ix.origin
    rng = np.random.default_rng(7)
    out = [(0, span, 2000), (0, span, 700), (-span // 4, 2 * span, 2000)]
    for _ in range(n):
        w = int(10 ** rng.uniform(2, np.log10(max(span, 1000))))
        a = int(rng.integers(0, max(1, span - w)))
        out.append((a, a + w, int(rng.integers(200, 3000))))
    return out


def _scan(ix: TimelineIndex, start: int, end: int, width: int
          ) -> tuple[list[int], dict[tuple[int, int, int], tuple[int, int]]]:
    """The event-by-event answer (what the index did before the pyramid): drawn events,
    and (row, depth, pixel) -> (count, busy) of the narrow ones."""
    ns_px = (end - start) / width
    idx = ix.window(start, end)
    wide = ix.dur[idx] >= ns_px
    small = idx[~wide]
    px = np.clip(((ix.ts[small] - ix.origin - start) / ns_px).astype(np.int64), 0, width - 1)
    agg: dict[tuple[int, int, int], tuple[int, int]] = {}
    for r, d, p, dur in zip(ix.row[small].tolist(), ix.depth[small].tolist(), px.tolist(),
                            ix.dur[small].tolist(), strict=True):
        c, b = agg.get((r, d, p), (0, 0))
        agg[(r, d, p)] = (c + 1, b + dur)
    return idx[wide].tolist(), agg


def _aggregates(q: dict[str, Any], start: int, ns_px: float
                ) -> dict[tuple[int, int, int], tuple[int, int]]:
    a = q["aggregates"]
    px = [round((t - start) / ns_px) for t in a["ts"]]
    return {(r, d, p): (c, b) for r, d, p, c, b in
            zip(a["row"], a["depth"], px, a["count"], a["busy"], strict=True)}


@pytest.mark.parametrize("rel", REAL)
def test_drawn_events_are_those_of_the_scan(rel: str) -> None:
    """Events a pixel wide or more: exactly the scan's, for every window and width; the
    narrow ones are all summed (count and time), exactly when zoomed in below the pyramid."""
    ix = TimelineIndex(load_trace(str(shared_trace(rel)), use_cache=False))
    assert ix.n > 1000
    finest = min(ix.lod.cells, default=99)
    for start, end, width in _windows(ix):
        q = ix.query(start, end, width)
        drawn, agg = _scan(ix, start, end, width)
        assert q["events"]["id"] == drawn, (rel, start, end, width)
        ns_px = (end - start) / width
        if int(np.log2(ns_px)) < finest:  # summed from the events themselves: exact
            assert _aggregates(q, start, ns_px) == agg
        if start <= 0 and end >= ix.finish - ix.origin:  # everything is in the window
            assert sum(q["aggregates"]["count"]) == sum(c for c, _ in agg.values())
            assert sum(q["aggregates"]["busy"]) == sum(b for _, b in agg.values())


def test_pyramid_sums_every_narrow_event_once() -> None:
    """Synthetic: 200k events on 3 rows (nested pairs), the full window and its halves."""
    rng = np.random.default_rng(3)
    n = 200_000
    ts = np.sort(rng.integers(0, 10**9, n)).astype(np.int64)
    dur = (10 ** rng.uniform(1, 6, n)).astype(np.int64)
    row = rng.integers(0, 3, n).astype(np.int32)
    depth = rng.integers(0, 4, n).astype(np.int16)
    lod = Lod(ts, dur, row, depth, int(ts.min()), 3)
    assert lod.cells, "a trace this dense gets a pyramid"
    span = int((ts + dur).max() - ts.min())
    for start, end in ((0, span), (0, span // 2), (span // 2, span)):
        for width in (300, 2000):
            ans = lod.query(start, end, width)
            ns_px = (end - start) / width
            t0, t1 = ts.min() + start, ts.min() + end
            inside = (ts < t1) & (ts + dur > t0)
            assert np.array_equal(ans.events, np.flatnonzero(inside & (dur >= ns_px)))
            narrow = inside & (dur < ns_px)
            # bins are whole: those cut by the window's edges may count a few events more
            # or less than the scan, never more than the bins at the two edges hold
            slack = 0 if start == 0 and end >= span else int(
                (np.abs(ts - t0) < 2 * ns_px).sum() + (np.abs(ts - t1) < 2 * ns_px).sum())
            assert abs(int(ans.agg_count.sum()) - int(narrow.sum())) <= slack
            assert (ans.agg_px >= 0).all() and (ans.agg_px < width).all()
            keys = ans.agg_row * 10**9 + ans.agg_depth * 10**6 + ans.agg_px
            assert len(np.unique(keys)) == len(keys)  # one sum per (row, depth, pixel)


@pytest.mark.parametrize("rel", REAL[:2])
def test_index_from_the_cache_answers_as_from_memory(rel: str) -> None:
    path = str(shared_trace(rel))
    fresh = TimelineIndex(load_trace(path, use_cache=False))
    load_trace(path, use_cache=True)  # stores
    cached_trace = load_trace(path, use_cache=True)
    source = read_source(path)
    assert cache.load(cache.key_for(source, READER_VERSION), path) is not None
    cached = TimelineIndex(cached_trace)
    for col in ("row", "ts", "dur", "depth", "name", "table", "src", "partner"):
        assert np.array_equal(getattr(fresh, col), getattr(cached, col)), col
    for start, end, width in _windows(fresh, 6):
        assert fresh.query(start, end, width) == cached.query(start, end, width)
    for i in (0, fresh.n // 2, fresh.n - 1):
        assert fresh.event(i) == cached.event(i)


def test_reader_reads_a_local_file_by_byte_ranges(tmp_path: Path) -> None:
    """The file's bytes are never held whole (the 1 GB report peaked at 1.48 GB); in
    Kineto's own layout (traceEvents last, one event per block), as PyTorch writes it."""
    import gzip

    path = shared_trace(REAL[2])

    plain = tmp_path / "t.json"
    plain.write_bytes(gzip.decompress(path.read_bytes()))
    source = read_source(str(plain))
    cache.key_for(source, "test")
    trace = read_kineto(source, workers=1)
    assert "data" not in source.__dict__  # RawSource.data: the whole file, never loaded
    expected = read_kineto(read_source(str(path)), workers=1)
    assert trace.meta.events == expected.meta.events
    assert np.array_equal(trace.host.ts, expected.host.ts)
    assert trace.strings == expected.strings


def _arrays_only(obj: Any, seen: set[int], where: str) -> None:
    """Every value reachable from a timeline index is a numpy array or a small container."""
    if id(obj) in seen or obj is None or isinstance(obj, (int, float, str, bool)):
        return
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        assert obj.dtype != object, where
        return
    if isinstance(obj, Trace):
        for name in Trace.TABLES:
            for col, arr in getattr(obj, name).columns().items():
                assert isinstance(arr, np.ndarray) and arr.dtype != object, (name, col)
        return
    if isinstance(obj, (list, tuple, dict)):
        items = list(obj.values()) if isinstance(obj, dict) else list(obj)
        assert len(items) < 10_000, f"{where}: a Python container of {len(items)} items"
        for k, v in enumerate(items):
            _arrays_only(v, seen, f"{where}[{k}]")
        return
    fields = (vars(obj) if hasattr(obj, "__dict__")
              else {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)})
    for k, v in fields.items():
        _arrays_only(v, seen, f"{where}.{k}")


def test_server_loads_in_a_child_and_keeps_columns() -> None:
    """With the cache on, the server parses and analyses in a child process and keeps the
    report, the step series and an index of numpy columns (no Python object per event)."""
    from stepscope.report.build import build_report
    from stepscope.server.store import TraceStore

    path = str(shared_trace(REAL[1]))
    store = TraceStore(use_cache=True)
    try:
        entry = store.get(path)
        deadline = time.monotonic() + 120
        while entry.state not in ("ready", "error") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert entry.state == "ready", entry.error
        assert entry.timeline is not None and entry.report is not None
        assert entry.series is not None
        _arrays_only(entry.timeline, set(), "timeline")
        expected = build_report(load_trace(path, use_cache=False), top=1000).to_json()
        assert entry.report["steps"] == expected["steps"]
        assert [f["id"] for f in entry.report["findings"]] == \
            [f["id"] for f in expected["findings"]]
        assert entry.timeline.n == TimelineIndex(load_trace(path, use_cache=False)).n
    finally:
        store.close()


def test_a_child_that_fails_is_one_line(tmp_path: Path) -> None:
    from stepscope.server.store import TraceStore

    bad = tmp_path / "bad.pt.trace.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "cat": "kernel"')
    store = TraceStore(use_cache=True)
    try:
        entry = store.get(str(bad))
        deadline = time.monotonic() + 60
        while entry.state not in ("ready", "error") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert entry.state == "error"
        assert entry.error is not None and "\n" not in entry.error and "bad.pt.trace" in entry.error
    finally:
        store.close()


def test_a_child_that_dies_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed (e.g. by the OOM killer) before answering: a one-line error, no hang."""
    import os

    from stepscope.server import child

    def dies(path: str, conn: Any, top: int) -> None:
        os._exit(3)

    monkeypatch.setattr(child, "_analyse", dies)
    with pytest.raises(child.ChildError, match=r"t\.json: .*exit code 3"):
        child.Children().run("t.json", 10, lambda d, t: None, lambda: None)
