"""The critical path's window basis and its drawing bands (issues 24/26 items 2 and 8): the
window runs from its start to its end or its last event's end, whichever is later; the bands
hold every event of the path, merged per lane and category where they touch."""

from __future__ import annotations

from pathlib import Path

from tests.builders import TraceBuilder

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph import kinds as K
from stepscope.analysis.graph.critical import PathResult, critical_path
from stepscope.analysis.graph.window import Window
from stepscope.report.json.critical import bands_json

US = 1000


def _path(b: TraceBuilder, tmp_path: Path, start: float, end: float) -> PathResult:
    t = b.load(tmp_path)
    return critical_path(t, Links(t), Window("w", int(start * US), int(end * US)))


def test_the_window_reaches_its_last_events_end(tmp_path: Path) -> None:
    """A kernel launched in [0, 100] runs to 250: the window is 250 µs, not the host
    range's 100 nor the events' span (first start 10 to 250 = 240)."""
    b = TraceBuilder()
    o = b.op("aten::mm", 10, 50)
    b.launch(o, "cudaLaunchKernel", 20, 5, kernel="sgemm", k_ts=100, k_dur=150)
    r = _path(b, tmp_path, 0, 100)
    assert r.span_ns == 250 * US
    assert r.length_ns <= r.span_ns
    # a window longer than its events keeps its own length (a step that waited, idle)
    b2 = TraceBuilder()
    b2.op("aten::add", 10, 20)
    (tmp_path / "idle").mkdir()
    assert _path(b2, tmp_path / "idle", 0, 1000).span_ns == 1000 * US


def test_bands_hold_every_path_event_merged_where_they_touch(tmp_path: Path) -> None:
    """Three ops back to back on a thread merge into one band; a kernel on a stream is a
    band of its own lane and category; a gap wider than window/4000 keeps two bands."""
    b = TraceBuilder()
    b.op("aten::a", 0, 100)
    b.op("aten::b", 100, 100)
    b.op("aten::c", 200, 100)
    d = b.op("aten::d", 600, 50)  # 300 µs after c: apart
    b.launch(d, "cudaLaunchKernel", 610, 5, kernel="k1", k_ts=620, k_dur=100)
    r = _path(b, tmp_path, 0, 1000)
    assert {e.name for e in r.events} == {"aten::a", "aten::b", "aten::c", "aten::d", "k1"}
    bands = r.bands
    assert bands is not None and bands.events == len(r.events)
    got = sorted((bands.lanes[int(ln)], K.CATEGORIES[int(c)], int(s) // US, int(e) // US)
                 for ln, c, s, e in zip(bands.lane, bands.cat, bands.start_ns, bands.end_ns,
                                        strict=True))
    host = [g for g in got if g[0].startswith("thread")]
    dev = [g for g in got if g[0].startswith("stream")]
    assert [g[2:] for g in host if g[1] == "cpu"] == [(0, 300), (600, 650)]
    assert [g[1:] for g in dev] == [("gpu_compute", 620, 720)]
    doc = bands_json(bands)
    assert doc is not None and doc["events"] == bands.events
    assert doc["categories"] == list(K.CATEGORIES)
    assert len(doc["lane"]) == len(doc["start_us"]) == len(doc["dur_us"]) == len(got)
