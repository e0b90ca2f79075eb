"""Collectives matched across ranks by the trace's sequence numbers or by order; per-group
figures (transfer, wait, skew, bandwidth) on synthetic NCCL runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.distributed_builders import NELEMS, write_run

from stepscope.formats import load_trace
from stepscope.report.run import RunReport, build_run_report, find_run

US = 1000  # ns


def _with_seq(paths: list[Path], drop_first: int | None = None, as_text: bool = False) -> None:
    """Write NCCL's ``Seq`` on every collective kernel (its index on the group); on rank
    ``drop_first`` remove the first one, as when a capture starts one collective late."""
    for rank, path in enumerate(paths):
        doc = json.loads(path.read_text())
        events = doc["traceEvents"]
        colls = [e for e in events if "Collective name" in e.get("args", {})]
        for k, e in enumerate(colls):
            e["args"]["Seq"] = str(k) if as_text else k
        if rank == drop_first:
            events.remove(colls[0])
        path.write_text(json.dumps(doc))


def _report(directory: Path) -> RunReport:
    return build_run_report(find_run([str(directory)]), executor="serial", use_cache=False)


def test_seq_is_read(tmp_path: Path) -> None:
    paths = write_run(tmp_path, [1000, 1000])
    _with_seq(paths, as_text=True)  # some writers quote numbers
    trace = load_trace(str(paths[0]), use_cache=False)
    assert trace.collectives.seq.tolist() == [0, 1]


def test_matched_by_sequence_survives_a_late_start(tmp_path: Path) -> None:
    # rank 2 computes 3 ms longer; rank 3's capture misses the first all-reduce
    paths = write_run(tmp_path, [1000, 1000, 4000, 1000])
    _with_seq(paths, drop_first=3)
    d = _report(tmp_path).distributed
    assert d.matched_by == "sequence"
    (group,) = d.groups
    assert group.pg == "0" and group.ranks == (0, 1, 2, 3)
    assert [(c.seq, c.ranks) for c in group.calls] == [(0, (0, 1, 2)), (1, (0, 1, 2, 3))]
    assert d.unmatched_calls == 1
    second = group.calls[1]
    # the fast ranks wait 3 ms for rank 2, whose own call is the 1 ms transfer
    assert second.transfer_ns == pytest.approx(1000 * US, abs=1)
    assert second.wait_ns == pytest.approx((3000 * US, 3000 * US, 0, 3000 * US), abs=1)
    assert second.skew_ns == pytest.approx(3000 * US, abs=1)  # one clock: = the largest wait
    assert second.nbytes == NELEMS * 4
    assert second.algbw_gbps == pytest.approx(NELEMS * 4 / (1000 * US))  # bytes/ns = GB/s
    assert second.busbw_gbps == pytest.approx(second.algbw_gbps * 2 * 3 / 4)
    assert group.wait_ns == {0: 6000 * US, 1: 6000 * US, 2: 0, 3: 3000 * US}


def test_order_fallback_mismatches_a_late_start(tmp_path: Path) -> None:
    # the same run without Seq: rank 3's only call is paired with the others' first
    paths = write_run(tmp_path, [1000, 1000, 4000, 1000])
    doc = json.loads(paths[3].read_text())
    first = next(e for e in doc["traceEvents"] if "Collective name" in e.get("args", {}))
    doc["traceEvents"].remove(first)
    paths[3].write_text(json.dumps(doc))
    d = _report(tmp_path).distributed
    assert d.matched_by == "order"
    (group,) = d.groups
    assert [(c.seq, c.ranks) for c in group.calls] == [(0, (0, 1, 2, 3)), (1, (0, 1, 2))]


def test_skew_needs_agreeing_clocks_waits_do_not(tmp_path: Path) -> None:
    paths = write_run(tmp_path, [1000, 1000, 4000, 1000], offsets_us=[0, 0, 0, 5_000_000])
    _with_seq(paths)
    d = _report(tmp_path).distributed
    call = d.groups[0].calls[0]
    assert call.wait_ns == pytest.approx((3000 * US, 3000 * US, 0, 3000 * US), abs=1)
    # rank 3 starts at the same moment as ranks 0 and 1, but its clock reads 5 s later
    assert call.skew_ns == pytest.approx(5_000_000 * US, abs=1)


def test_group_json(tmp_path: Path) -> None:
    _with_seq(write_run(tmp_path, [1000, 2000]))
    d = _report(tmp_path).to_json()["distributed"]
    assert d["matched_by"] == "sequence"
    (g,) = d["groups"]
    assert g["process_group"] == "0" and g["ranks"] == [0, 1]
    assert g["wait_us"] == [2000.0, 0.0]
    call = g["calls"][0]
    assert set(call) == {"name", "seq", "ranks", "bytes", "transfer_us", "skew_us", "wait_us",
                         "algbw_gbps", "busbw_gbps"}
    assert call["name"] == "allreduce" and call["wait_us"] == [1000.0, 0.0]
    assert call["transfer_us"] == 1000.0 and call["skew_us"] == 1000.0
    assert d["pipeline"] is None


def test_process_groups_are_read(tmp_path: Path) -> None:
    from tests.builders import TraceBuilder

    b = TraceBuilder()
    b.distributed = {"backend": "gloo", "rank": 2, "world_size": 4, "pg_config": [
        {"pg_name": "0", "ranks": [0, 1, 2, 3]}, {"pg_name": "1", "ranks": [0, 2]},
        {"pg_name": "bad", "ranks": "[2, 3]"}, "junk"]}
    with b.step(1, 1000.0, 100.0):
        b.op("aten::mm", 1010.0, 50.0)
    meta = load_trace(str(b.write(tmp_path, "a.json")), use_cache=False).meta
    assert meta.rank == 2
    assert meta.process_groups == (("0", (0, 1, 2, 3)), ("1", (0, 2)))
    b.distributed = {"backend": "gloo", "rank": 2, "world_size": 4, "pg_config": "nonsense"}
    meta = load_trace(str(b.write(tmp_path, "b.json")), use_cache=False).meta
    assert meta.rank == 2 and meta.process_groups == ()


def test_unnamed_groups_split_only_along_known_process_groups(tmp_path: Path) -> None:
    """Without group names, ranks issuing different calls are split only when the parts are
    process groups distributedInfo lists; a capture that merely stops one call early stays in
    its group (its first calls still match)."""
    paths = write_run(tmp_path, [1000, 1000, 4000])
    for rank, path in enumerate(paths):
        doc = json.loads(path.read_text())
        colls = [e for e in doc["traceEvents"] if "Collective name" in e.get("args", {})]
        for e in colls:
            del e["args"]["Process Group Name"]
        if rank == 1:
            doc["traceEvents"].remove(colls[-1])
        path.write_text(json.dumps(doc))
    d = _report(tmp_path).distributed
    assert [(g.pg, g.ranks, [c.ranks for c in g.calls]) for g in d.groups] == [
        ("", (0, 1, 2), [(0, 1, 2), (0, 2)])]
    assert d.stragglers[0].rank == 2
