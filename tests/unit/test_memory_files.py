"""Allocator snapshots (built in torch's documented ``_snapshot`` format, hostile pickles)
and memory timelines (raw and plot exports) read and analysed with exact numbers."""

from __future__ import annotations

import gzip
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepscope.analysis.memory.snapshot import BEFORE_TRACE, snapshot_analysis
from stepscope.analysis.memory.timeline import category_timeline
from stepscope.errors import TraceFormatError
from stepscope.formats.memory.snapshot import loads_plain, read_snapshot
from stepscope.formats.memory.timeline import read_memory_timeline, timeline_from_json

MB = 1 << 20


def _frames(py: str, line: int) -> list[dict[str, Any]]:
    return [
        {"filename": "CUDACachingAllocator.cpp", "line": 0, "name": "malloc"},
        {"filename": "/usr/lib/python3.11/site-packages/torch/nn/modules/linear.py",
         "line": 125, "name": "forward"},
        {"filename": py, "line": line, "name": "train_step"},
    ]


def _block(addr: int, size: int, state: str, frames: list[dict[str, Any]] | None = None
           ) -> dict[str, Any]:
    return {"address": addr, "size": size, "requested_size": size - 512 if size > 512 else size,
            "state": state, "frames": frames or []}


def built_snapshot(oom: bool = False) -> dict[str, Any]:
    """Two segments on device 0: one 20 MB segment split into a live 8 MB block, a free
    4 MB block and a live 6 MB block (2 MB free tail); one fully free 2 MB segment.
    The trace: 3 MB allocated before it (freed inside it), then alloc/free pairs."""
    base = 0x7F0000000000
    seg1 = {
        "device": 0, "address": base, "total_size": 20 * MB, "allocated_size": 14 * MB,
        "active_size": 14 * MB, "requested_size": 14 * MB - 1024, "stream": 0,
        "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": False,
        "frames": [],
        "blocks": [
            _block(base, 8 * MB, "active_allocated", _frames("train.py", 10)),
            _block(base + 8 * MB, 4 * MB, "inactive"),
            _block(base + 12 * MB, 6 * MB, "active_allocated", _frames("train.py", 20)),
            _block(base + 18 * MB, 2 * MB, "inactive"),
        ],
    }
    seg2 = {"device": 0, "address": base + 64 * MB, "total_size": 2 * MB, "allocated_size": 0,
            "active_size": 0, "requested_size": 0, "stream": 0, "segment_type": "small",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
            "blocks": [_block(base + 64 * MB, 2 * MB, "inactive")]}

    def ev(action: str, addr: int, size: int, t: int, line: int = 30) -> dict[str, Any]:
        return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": t,
                "frames": _frames("train.py", line)}

    trace = [
        ev("segment_alloc", base, 20 * MB, 1),
        ev("alloc", base, 8 * MB, 2, 10),                     # live at the end
        ev("alloc", base + 8 * MB, 4 * MB, 3, 30),            # temporary
        ev("free_requested", base + 99 * MB, 3 * MB, 4),      # allocated before the trace
        ev("free_completed", base + 99 * MB, 3 * MB, 4),
        ev("alloc", base + 12 * MB, 6 * MB, 5, 20),           # live at the end
        ev("free_requested", base + 8 * MB, 4 * MB, 6),       # peak was just before
        ev("free_completed", base + 8 * MB, 4 * MB, 6),
    ]
    if oom:
        trace.append({"action": "oom", "size": 40 * MB, "device_free": 1 * MB, "stream": 0,
                      "time_us": 7, "frames": _frames("train.py", 40)})
    return {"segments": [seg1, seg2], "device_traces": [trace],
            "allocator_settings": {"expandable_segments": False}}


def test_snapshot_in_the_documented_format(tmp_path: Path) -> None:
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(built_snapshot(oom=True), protocol=4))
    snap = read_snapshot(str(path))
    assert "allocator_settings" in snap.keys
    (d,) = snapshot_analysis(snap).devices
    assert (d.segments, d.reserved, d.allocated, d.active) == (2, 22 * MB, 14 * MB, 14 * MB)
    assert d.requested == 14 * MB - 1024
    assert d.inactive == 8 * MB and d.fragmentation_pct == pytest.approx(100 * 8 / 22)
    assert (d.split_inactive_blocks, d.split_inactive_bytes) == (2, 6 * MB)
    assert d.largest_inactive_block == 4 * MB
    assert [(s.site, s.bytes) for s in d.sites] == [("train.py:10 in train_step", 8 * MB),
                                                    ("train.py:20 in train_step", 6 * MB)]
    # replay: 3 MB before the trace, +8 +4 -3 +6 -4 -> peak 8+4+6 = 18 MB at t=5
    assert d.before_trace == 3 * MB
    assert d.peak_allocated == 18 * MB and d.peak_time_us == 5
    assert {s.site: s.bytes for s in d.peak_sites} == {
        "train.py:10 in train_step": 8 * MB, "train.py:20 in train_step": 6 * MB,
        "train.py:30 in train_step": 4 * MB}
    assert d.actions == {"alloc": 3, "free_completed": 2, "free_requested": 2, "oom": 1,
                         "segment_alloc": 1}
    (oom,) = d.ooms
    assert (oom.requested, oom.device_free, oom.allocated, oom.time_us) == (
        40 * MB, 1 * MB, 14 * MB, 7)


def test_a_corrupt_block_size_counts_as_nothing(tmp_path: Path) -> None:
    # a size near 2**63 (a flipped field) wrapped the running sums and raised OverflowError
    snap_data = built_snapshot(oom=True)
    trace = snap_data["device_traces"][0]
    first_alloc = next(e for e in trace if e["action"] == "alloc")
    first_alloc["size"] = 2**63 - 1
    path = tmp_path / "snap.pickle"
    path.write_bytes(pickle.dumps(snap_data, protocol=4))
    (d,) = snapshot_analysis(read_snapshot(str(path))).devices
    assert d.peak_allocated is not None and 0 < d.peak_allocated <= 22 * MB
    (oom,) = d.ooms
    assert oom.requested == 40 * MB


def test_memory_before_the_trace_is_live_at_the_peak(tmp_path: Path) -> None:
    snap = built_snapshot()
    trace = snap["device_traces"][0]
    # the pre-trace block is freed only after the peak now
    trace[3:5] = []
    trace.append({"action": "free_requested", "addr": 1, "size": 3 * MB, "time_us": 9})
    path = tmp_path / "s.pickle.gz"
    path.write_bytes(gzip.compress(pickle.dumps(snap)))
    (d,) = snapshot_analysis(read_snapshot(str(path))).devices
    assert d.peak_allocated == 21 * MB
    assert {s.site: s.bytes for s in d.peak_sites}[BEFORE_TRACE] == 3 * MB


class _Boom:
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, (f"touch {self.marker}",))


def test_hostile_pickle_is_refused_and_runs_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    evil = {"segments": [], "device_traces": [[{"action": "alloc", "x": _Boom(str(marker))}]]}
    for proto in (0, 2, 4, 5):
        path = tmp_path / f"evil{proto}.pickle"
        path.write_bytes(pickle.dumps(evil, protocol=proto))
        with pytest.raises(TraceFormatError) as err:  # protocol 0: refused by its header
            read_snapshot(str(path))
        assert "\n" not in str(err.value) and str(path) in str(err.value)
        if proto >= 2:
            assert "refused to load" in str(err.value) and "system" in str(err.value)
    assert not marker.exists()
    # class instances, extension codes and persistent ids are refused too
    with pytest.raises(TraceFormatError, match="refused"):
        loads_plain(pickle.dumps({"segments": [Path("/x")]}, protocol=4), "p")
    with pytest.raises(TraceFormatError):
        loads_plain(b"\x80\x02\x82\x01.", "ext")  # EXT1 code 1
    with pytest.raises(TraceFormatError, match="persistent"):
        loads_plain(b"\x80\x02K\x01Q.", "pid")  # BINPERSID
    assert not marker.exists()


@pytest.mark.parametrize("blob, message", [
    (b"", "empty"),
    (b"junk", "not a pickle"),
    (b"\x80\x04junk", "not a memory snapshot"),
    (pickle.dumps([1, 2], protocol=4), "list of records"),
    (pickle.dumps({"a": 1}, protocol=4), "no 'segments'"),
    (pickle.dumps({"segments": [{}], "device_traces": 3}, protocol=4), "not a list"),
])
def test_bad_snapshots_get_one_line(tmp_path: Path, blob: bytes, message: str) -> None:
    path = tmp_path / "bad.pickle"
    path.write_bytes(blob)
    with pytest.raises(TraceFormatError, match=message) as err:
        read_snapshot(str(path))
    assert "\n" not in str(err.value)


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=300))
def test_fuzz_snapshot_reader(blob: bytes) -> None:
    try:
        loads_plain(b"\x80\x04" + blob, "fuzz")
    except TraceFormatError as exc:
        assert "\n" not in str(exc)


def test_raw_timeline(tmp_path: Path) -> None:
    rows = [[-1, 1, 100, 0], [-1, 1, 50, 1],           # parameter, optimizer state before
            [1000, 2, 30, 4], [1000, 2, 20, 3],        # activation + temporary at 1 µs
            [2000, 3, -30, 4], [2000, 3, 30, 5],       # activation becomes a gradient
            [3000, 4, -20, 3]]
    path = tmp_path / "t.raw.json.gz"
    path.write_bytes(gzip.compress(json.dumps(rows).encode()))
    tl = read_memory_timeline(str(path))
    assert tl.raw and tl.t_ns.tolist() == [1000, 2000, 3000]
    c = category_timeline(tl)
    assert c.peak_bytes == 200 and c.peak_ns == 1000
    assert c.at_peak == {"parameter": 100, "optimizer_state": 50, "input": 0, "temporary": 20,
                         "activation": 30, "gradient": 0, "autograd_detail": 0, "unknown": 0}
    assert c.max_by_category["gradient"] == 30
    assert tl.sizes[-1].tolist() == [100, 50, 0, 0, 0, 30, 0, 0]


def test_plot_timeline_and_bad_timelines(tmp_path: Path) -> None:
    doc = [[5, 6], [[0, 10, 0, 0, 0, 4, 0, 0, 0], [0, 10, 0, 0, 0, 1, 2, 0, 0]]]
    tl = timeline_from_json(json.dumps(doc).encode(), "p.json")
    assert not tl.raw and tl.t_ns.tolist() == [5000, 6000]
    assert category_timeline(tl).peak_bytes == 14
    two_raw_rows = [[1, 2, 8, 4], [2, 4, -8, 4]]
    assert timeline_from_json(json.dumps(two_raw_rows).encode(), "r").raw
    for blob, msg in ((b"<html><img src=x></html>", "only a picture"),
                      (b"{}", "expected a JSON list"), (b"[[1, 2, 3]]", "rows are not"),
                      (b"[[1, 2, 3, 9]]", "category outside"), (b"[[1,", "not valid JSON"),
                      (b'[[1, 2], [[1, 2]]]', "9 columns")):
        with pytest.raises(TraceFormatError, match=msg):
            timeline_from_json(blob, "x.json")


def test_cli_memory_on_a_snapshot_and_a_timeline(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from stepscope.cli.main import main

    snap = tmp_path / "s.pickle"
    snap.write_bytes(pickle.dumps(built_snapshot(oom=True), protocol=4))
    assert main(["memory", str(snap), "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "snapshot"
    dev = out["result"]["devices"][0]
    assert dev["reserved_bytes"] == 22 * MB and dev["ooms"][0]["requested_bytes"] == 40 * MB
    (oom,) = out["findings"]  # 8 MB cached: below the fragmentation threshold
    assert oom["id"] == "out-of-memory" and oom["severity"] == "high"
    assert "0.04 GiB more than was free" in oom["estimated_saving"]["how"]
    assert main(["memory", str(snap)]) == 0
    assert "out of memory" in capsys.readouterr().out
    tl = tmp_path / "t.raw.json"
    tl.write_text(json.dumps([[1000, 2, 64, 4]]))
    assert main(["memory", str(tl), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["result"]["peak_bytes"] == 64
    bad = tmp_path / "x.txt"
    bad.write_text("hello")
    assert main(["memory", str(bad)]) == 2
    assert "neither a memory snapshot" in capsys.readouterr().err


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.integers(-(2**40), 2**40), min_size=0, max_size=5), max_size=8))
def test_fuzz_timeline_reader(rows: list[list[int]]) -> None:
    try:
        tl = timeline_from_json(json.dumps(rows).encode(), "fuzz.json")
    except TraceFormatError as exc:
        assert "\n" not in str(exc)
        return
    c = category_timeline(tl)
    assert c.peak_bytes == (int(tl.sizes.sum(axis=1).max()) if len(tl.t_ns) else 0)


def test_report_on_a_snapshot_points_to_stepscope_memory(tmp_path: Path) -> None:
    import stepscope

    path = tmp_path / "s.pickle"
    path.write_bytes(pickle.dumps(built_snapshot(), protocol=4))
    with pytest.raises(TraceFormatError, match="stepscope memory"):
        stepscope.load(str(path), cache=False)


def test_snapshot_fragmentation_finding() -> None:
    from stepscope.advice.rules.memory.snapshot import snapshot_findings
    from stepscope.formats.memory.snapshot import snapshot_from_data

    snap = built_snapshot()
    snap["segments"][1]["total_size"] = 2048 * MB  # a big, fully free segment
    snap["segments"][1]["blocks"][0]["size"] = 2048 * MB
    (f,) = snapshot_findings(snapshot_analysis(snapshot_from_data(snap, "s")))
    assert f.id == "allocator-fragmentation" and "2.01 GiB reserved but unused" in f.title
    assert snapshot_findings(snapshot_analysis(snapshot_from_data(built_snapshot(), "s"))) == []
