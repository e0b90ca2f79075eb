"""Runs of many ranks on synthetic traces: breakdown, sync/transfer, stragglers, rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.distributed_builders import NELEMS, write_run

from stepscope.advice.rules.distributed import rank_imbalance, rank_overlap, straggler
from stepscope.analysis.distributed.rank import dtype_bytes, rank_summary
from stepscope.analysis.distributed.run import bus_factor
from stepscope.cli.main import main
from stepscope.formats import load_trace
from stepscope.model.run import assign_ranks, rank_from_name
from stepscope.report.build import build_report
from stepscope.report.run import build_run_report, find_run


def _run(tmp_path: Path, compute: list[float], **kw: object):  # type: ignore[no-untyped-def]
    write_run(tmp_path, compute, **kw)  # type: ignore[arg-type]
    return build_run_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)


def test_straggler_sync_transfer_and_bandwidth(tmp_path: Path) -> None:
    # rank 2 computes 3 ms longer; rank 3's clock is 5 s ahead (must not matter)
    rep = _run(tmp_path, [1000, 1000, 4000, 1000], offsets_us=[0, 0, 0, 5_000_000])
    d = rep.distributed
    assert d.world_size == 4 and d.rank_source == "distributedInfo"
    top = d.stragglers[0]
    assert top.rank == 2 and top.last_arrivals == 2 and top.matched_calls == 2
    # 3 other ranks x 3 ms x 2 steps
    assert top.wait_caused_ns == pytest.approx(18_000_000, abs=2000)
    assert top.share_pct == pytest.approx(100.0)
    assert len(d.stragglers) == 1
    rows = {r.rank: r for r in d.ranks}
    assert rows[0].transfer_ns == pytest.approx(2_000_000, abs=1000)
    assert rows[0].sync_ns == pytest.approx(6_000_000, abs=1000)
    assert rows[2].sync_ns == 0
    assert [(st.step, st.sync_ns, st.transfer_ns, st.computation_ns) for st in rows[0].per_step] \
        == [("1", 3_000_000, 1_000_000, 1_000_000), ("2", 3_000_000, 1_000_000, 1_000_000)]
    assert rows[0].computation_ns == 2_000_000 and rows[2].computation_ns == 8_000_000
    assert rows[0].communication_ns == pytest.approx(8_000_000, abs=1000)
    assert rows[0].comm_overlap_pct == 0.0
    (coll,) = d.collectives
    assert coll.collective == "allreduce" and coll.calls == 2 and coll.group_size == 4
    assert coll.bytes_per_call == NELEMS * 4
    assert coll.algbw_gbps == pytest.approx(NELEMS * 4 / 1_000_000, rel=1e-3)  # bytes/ns
    assert coll.busbw_gbps == pytest.approx(coll.algbw_gbps * 1.5, rel=1e-6)
    assert [s.last_rank for s in d.steps] == [2, 2]
    assert [(c.step, c.last_rank, c.ranks) for c in d.calls] == [("1", 2, 4), ("2", 2, 4)]
    assert d.calls[0].wait_ns == pytest.approx(9_000_000, abs=1000)
    assert d.calls[0].max_wait_ns == pytest.approx(3_000_000, abs=1000)
    assert d.calls[0].nbytes == NELEMS * 4
    assert d.imbalance.slowest_rank == 2
    assert d.imbalance.max_over_mean == pytest.approx(8 / 3.5 * 1.0, rel=1e-3)
    ids = [f.id for f in rep.findings]
    assert ids[0] == "straggler" and "rank-imbalance" in ids
    assert "Rank 2" in rep.findings[0].title
    assert "computation" in rep.findings[0].evidence[1]
    assert top.slower_ops == ()  # synthetic kernels have no operators


def test_balanced_run_is_silent(tmp_path: Path) -> None:
    rep = _run(tmp_path, [1000, 1000, 1000], transfer_us=100, overlap_us=[100, 100, 100])
    d = rep.distributed
    assert straggler.check_run(d) is None
    assert rank_imbalance.check_run(d) is None
    assert rank_overlap.check_run(d) is None
    assert all(r.comm_overlap_pct == pytest.approx(100.0) for r in d.ranks)


def test_low_overlap_fires_and_overlap_pct(tmp_path: Path) -> None:
    rep = _run(tmp_path, [1000, 1000], transfer_us=2000, overlap_us=[500, 500])
    d = rep.distributed
    assert d.ranks[0].comm_overlap_pct == pytest.approx(25.0, abs=0.1)
    finding = rank_overlap.check_run(d)
    assert finding is not None and finding.id == "low-comm-overlap"
    assert finding.saving_us == pytest.approx(1500, abs=1)


def test_single_trace_shows_its_rank_part(tmp_path: Path) -> None:
    (p0, _p1) = write_run(tmp_path, [1000, 3000])
    part = build_report(load_trace(str(p0), use_cache=False)).to_json()["distributed"]
    assert part["rank"] == 0 and part["world_size"] == 2
    assert part["calls"] == 2 and part["bytes"] == 2 * NELEMS * 4
    assert part["computation_us"] == 2000.0


def test_rank_assignment() -> None:
    assert rank_from_name("/x/worker12_step_3.pt.trace.json") == 12
    assert rank_from_name("s3://b/run/rank-3.json.gz") == 3
    assert assign_ranks(["a", "b"], [1, 0]) == ([1, 0], "distributedInfo")
    assert assign_ranks(["rank1.json", "rank0.json"], [None, None]) == ([1, 0], "file names")
    assert assign_ranks(["a.json", "b.json"], [0, 0]) == ([0, 1], "order")


def test_formulas() -> None:
    assert bus_factor("allreduce", 8) == pytest.approx(1.75)
    assert bus_factor("allgather", 4) == pytest.approx(0.75)
    assert bus_factor("broadcast", 4) == 1.0
    assert dtype_bytes("BFloat16") == 2 and dtype_bytes("float") == 4 and dtype_bytes("x") == 0


def test_processes_equal_serial_and_cli_json(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path, [1000, 2500, 1000], distributed_info=False)
    run = find_run([str(tmp_path)])
    serial = build_run_report(run, executor="serial").to_json()
    pooled = build_run_report(run, executor="processes", workers=2).to_json()
    assert serial == pooled
    assert serial["distributed"]["rank_source"] == "file names"
    assert main(["report", str(tmp_path), "--format", "json", "--executor", "serial"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["distributed"]["stragglers"][0]["rank"] == 1
    assert out["source"]["format"] == "run" and out["source"]["traces"] == 3


def test_link_peak_pct(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path, [1000, 1000])  # 4 MB in 1 ms: algbw 4 GB/s, busbw 4 GB/s (n = 2)
    assert main(["report", str(tmp_path), "--format", "json", "--executor", "serial",
                 "--link-gbps", "8"]) == 0
    (coll,) = json.loads(capsys.readouterr().out)["distributed"]["collectives"]
    assert coll["busbw_gbps"] == pytest.approx(4.0, rel=1e-3)
    assert coll["link_peak_pct"] == pytest.approx(50.0, abs=0.1)


def test_list_of_files_and_bad_rank(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = write_run(tmp_path, [1000, 2000])
    bad = tmp_path / "rank2.json"
    bad.write_text("{not json")
    code = main(["report", *map(str, paths), str(bad), "--format", "json",
                 "--executor", "serial"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["source"]["partial"] is True and len(out["distributed"]["failed"]) == 1
    assert "rank2.json" in out["distributed"]["failed"][0]


def test_empty_directory_is_one_line_error(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no trace files" in err and err.count("\n") == 1


def test_text_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(tmp_path, [1000, 4000])
    assert main(["report", str(tmp_path), "--executor", "serial"]) == 0
    out = capsys.readouterr().out
    assert "Stragglers" in out and "Rank 1 is a straggler" in out


def test_summary_is_small(tmp_path: Path) -> None:
    (p0, _) = write_run(tmp_path, [1000, 1000], steps=5)
    s = rank_summary(load_trace(str(p0), use_cache=False))
    assert len(s.steps) == 5 and len(s.calls) == 5
    import pickle

    assert len(pickle.dumps(s)) < 5000
