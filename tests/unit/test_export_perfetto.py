"""Issue 24, item 4: a window export that Perfetto UI opens with the same content.

No Perfetto can run here (no network; the ``perfetto`` package downloads its trace
processor at run time), so ``tests/perfetto_import.py`` restates its JSON importer's rules
and these tests hold the export to them: on a real H100 trace, Perfetto would load from the
export exactly the slices, [memory] instants and flows it loads from the original in the
same window, and nothing would be refused or rescaled."""

from __future__ import annotations

import gzip
from collections import Counter
from pathlib import Path

import msgspec
import pytest
from tests.conftest import shared_trace
from tests.perfetto_import import load
from tests.unit.test_timeline_tracks import _deep

from stepscope.formats import load_trace
from stepscope.report.counters import CounterTracks
from stepscope.report.timeline import TimelineIndex
from stepscope.report.window_export import export_window

H100 = "outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz"


def _window(src: Path, third: bool) -> tuple[bytes, int, int]:
    tr = load_trace(str(src), use_cache=False)
    tl = TimelineIndex(tr)
    span = tl.finish - tl.origin
    start, end = (span // 3, 2 * span // 3) if third else (0, span)
    doc = export_window(tl, start, end, CounterTracks(tr))
    return msgspec.json.encode(doc), tl.origin + start, tl.origin + end


def test_perfetto_loads_the_export_of_a_real_window_as_it_loads_the_original() -> None:
    src = shared_trace(H100)
    data, t0, t1 = _window(src, third=True)
    got = load(data)
    assert got.fatal is None and got.refused == []
    # Kineto writes displayTimeUnit "ms" (display only); earlier Perfetto versions rescaled
    # every ts by it: the export leaves it out
    assert got.time_unit is None
    orig = load(gzip.decompress(src.read_bytes()))
    assert orig.time_unit == "ms"
    kept = [s for s in orig.slices if s[3] < t1 and s[3] + s[4] > t0
            and s[0] != "Spans"]  # Kineto's own "PyTorch Profiler (0)" span: not exported
    assert len(got.slices) == len(kept) == 5803
    for a, b in zip(sorted(got.slices), sorted(kept), strict=True):
        # same track, name and times (within the 1 ns of a µs float's truncation)
        assert a[:3] == b[:3] and abs(a[3] - b[3]) <= 1 and abs(a[4] - b[4]) <= 1, (a, b)
    memory = Counter(i[2] for i in orig.instants if t0 <= i[3] < t1)
    assert Counter(i[2] for i in got.instants) == memory and memory["[memory]"] == 1256
    assert got.flows_bound == 581 and got.flows_unbound == 0  # every launch -> kernel arrow
    assert sorted(got.counters) == ["CPU allocated (B) value", "GPU 0 allocated (B) value",
                                    "GPU 0 reserved (B) value"]


def test_perfetto_loads_every_event_of_a_deep_synthetic_export(tmp_path: Path) -> None:
    got = load(_window(_deep(tmp_path), third=False)[0])
    assert got.fatal is None and got.refused == [] and got.time_unit is None
    assert len(got.slices) == 30 + 5  # frames, step, linear, mm, launch, kernel
    assert got.flows_bound == 1 and got.flows_unbound == 0
    assert got.names[("process_name", "0")] == "GPU 0"
    assert got.names[("thread_name", "0/7")] == "stream 7"


@pytest.mark.parametrize(("doc", "what"), [
    ({"traceEvents": [{"ph": "X", "grid": [1], "ts": 1, "dur": 1}]}, "fatal"),
    ({"traceEvents": [{"ph": "X", "ts": 1}]}, "refused"),
    ({"traceEvents": [{"ph": "C", "ts": 1, "name": "c", "args": {"v": "x"}}]}, "refused"),
    ({"traceEvents": [{"ph": "f", "ts": 1, "id": 1, "bp": "e"}]}, "unbound"),
    ({"displayTimeUnit": "ns", "traceEvents": []}, "unit"),
])
def test_the_oracle_catches_what_perfetto_refuses(doc: dict[str, object], what: str) -> None:
    got = load(msgspec.json.encode(doc))
    assert {"fatal": got.fatal is not None, "refused": bool(got.refused),
            "unbound": got.flows_unbound == 1, "unit": got.time_unit == "ns"}[what]
