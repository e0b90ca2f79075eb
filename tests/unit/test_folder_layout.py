"""What a folder of traces is (report/folder.py): ranks of a job, or captures of one process.

`report DIR`, `diff DIR` and the dashboard's runs ask the same function (issue 21, item 10).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.distributed_builders import write_capture, write_run

from stepscope.cli.main import main
from stepscope.errors import UsageError
from stepscope.report.diff_load import summarise_folder
from stepscope.report.folder import RANKS, SPANS, Capture, folder_layout, worker_of
from stepscope.report.run import build_folder_report, build_run_report, find_run
from stepscope.report.spans import SpansReport

S = 1_000_000_000  # ns


def cap(path: str, *, rank: int | None = None, world: int | None = None,
        pid: str | None = "1000", start: int = 0, end: int = S) -> Capture:
    return Capture(path, rank, world, pid, start, end)


# ---------------------------------------------------------------- the rule, on metadata


def test_distributed_info_decides() -> None:
    ranks = [cap(f"d/r{r}.json", rank=r, world=8, pid="1") for r in range(8)]
    assert folder_layout("d", ranks).kind == RANKS  # same pid, other hosts: ranks still
    one = folder_layout("d", [cap("d/a.json", rank=3, world=8, start=0, end=S),
                              cap("d/b.json", rank=3, world=8, start=2 * S, end=3 * S)])
    assert (one.kind, one.process, one.processes) == (SPANS, "rank 3 of 8", 1)


@pytest.mark.parametrize(("captures", "message"), [
    ([cap("d/a.json", rank=0, world=2), cap("d/b.json")], "mixes traces of a distributed job"),
    ([cap("d/a.json", rank=0, world=2), cap("d/b.json", rank=1, world=4)],
     "different world sizes"),
    ([cap("d/a.json", rank=0, world=2), cap("d/b.json", rank=0, world=2),
      cap("d/c.json", rank=1, world=2)], "holds 2 captures of rank 0 of 2 beside traces of 1"),
    ([cap("d/a.json", pid="1", start=0, end=2 * S), cap("d/b.json", pid="2", start=S, end=3 * S),
      cap("d/c.json", pid="3", start=int(2.5 * S), end=4 * S)], "partly overlap"),
])
def test_mixed_folders_are_refused_in_one_line(captures: list[Capture], message: str) -> None:
    with pytest.raises(UsageError, match=message) as err:
        folder_layout("d", captures)
    assert "\n" not in str(err.value)


def test_without_distributed_info_the_process_decides() -> None:
    # torch.profiler's names: {worker}.{span}.pt.trace.json, worker = {hostname}_{pid}
    assert worker_of("logs/r/node1_4207.1795500390263.pt.trace.json.gz") == "node1_4207"
    assert worker_of("logs/r/trace.json") is None
    spans = [cap("d/worker0.1623143089861.pt.trace.json.gz", pid="25738", start=0, end=S),
             cap("d/worker0.1623143566756.pt.trace.json.gz", pid="25738", start=5 * S,
                 end=6 * S)]
    got = folder_layout("d", spans)
    assert (got.kind, got.process, got.processes) == (SPANS, "worker0 (pid 25738)", 1)
    # the same pid on two hosts (containers) with different worker names: two processes
    hosts = [cap("d/a_1.5.pt.trace.json", pid="1"), cap("d/b_1.5.pt.trace.json", pid="1")]
    assert folder_layout("d", hosts).kind == RANKS
    # unnamed files of one pid: one process; a rank in the name tells ranks apart
    assert folder_layout("d", [cap("d/x.json"), cap("d/y.json", start=2 * S,
                                                    end=3 * S)]).kind == SPANS
    assert folder_layout("d", [cap("d/rank0.json"), cap("d/rank1.json")]).kind == RANKS


def test_distinct_processes_are_ranks_only_when_captured_together() -> None:
    together = [cap("d/a.json", pid="1", start=0, end=2 * S),
                cap("d/b.json", pid="2", start=S // 2, end=2 * S)]
    assert folder_layout("d", together).kind == RANKS
    apart = [cap("d/a.json", pid="1", start=0, end=S),
             cap("d/b.json", pid="2", start=10 * S, end=11 * S)]
    got = folder_layout("d", apart)
    assert (got.kind, got.processes) == (SPANS, 2)
    assert got.process == "2 processes, captured one after another"


# ---------------------------------------------------------------- on synthetic traces


def test_two_spans_of_one_process_get_its_findings(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    write_capture(tmp_path, "host_7.100.pt.trace.json", base_us=1e6)
    write_capture(tmp_path, "host_7.200.pt.trace.json", base_us=5e6)
    report = build_folder_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)
    assert isinstance(report, SpansReport)
    assert report.layout.process == "host_7 (pid 1000)"
    assert [s.steps for s in report.spans] == [3, 3]
    with pytest.raises(UsageError, match=r"2 captures of host_7 \(pid 1000\), not ranks"):
        build_run_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)
    assert main(["report", str(tmp_path), "--format", "json", "--executor", "serial"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "stepscope.report/1" and doc["source"]["format"] == "spans"
    assert doc["source"]["traces"] == 2 and "distributed" not in doc
    assert [f["id"] for f in doc["findings"]] == ["gpu-low-utilization"]  # each file's own
    for f in doc["findings"]:
        assert f["spans"] == [0, 1] and f["evidence"][0].startswith("found in 2 of 2 captures")
    # the same files given one by one on the command line: the same rule
    files = sorted(str(p) for p in tmp_path.glob("*.json"))
    assert main(["report", *files, "--format", "json", "--executor", "serial"]) == 0
    assert json.loads(capsys.readouterr().out)["source"]["format"] == "spans"
    # --html writes one capture's report or a run of ranks' page: refused on several
    # captures (no one page), in one line naming them
    assert main(["report", str(tmp_path), "--html", str(tmp_path / "o.html"),
                 "--executor", "serial"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and err.endswith(
        "--html writes one capture's report or a run of ranks; these are 2 captures of host_7 "
        "(pid 1000): give one capture's file (host_7.100.pt.trace.json, host_7.200.pt.trace.json)")
    assert not (tmp_path / "o.html").exists()
    # diff reads the folder the same way: the spans pooled
    s = summarise_folder(str(tmp_path), use_cache=False)
    assert (s.kind, s.ranks, s.n_steps) == ("traces", 1, 6)


def test_ranks_without_distributed_info_captured_together(tmp_path: Path) -> None:
    """Old traces without distributedInfo: one process per rank, captured at the same time."""
    write_run(tmp_path, [1000, 2500, 1000], distributed_info=False)
    report = build_folder_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)
    assert not isinstance(report, SpansReport)
    assert report.distributed.world_size == 3
    s = summarise_folder(str(tmp_path), use_cache=False)
    assert (s.kind, s.ranks) == ("ranks", 3)


def test_processes_one_after_another_are_not_ranks(tmp_path: Path) -> None:
    """Two runs of a script (two pids) captured minutes apart: no imbalance between them."""
    write_capture(tmp_path, "a.json", base_us=1e6, pid=11, gemm_us=300.0)
    write_capture(tmp_path, "b.json", base_us=600e6, pid=12, gemm_us=900.0)
    report = build_folder_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)
    assert isinstance(report, SpansReport) and report.layout.processes == 2
    assert not {f.id for f in report.findings} & {"rank-imbalance", "straggler"}


def test_dashboard_run_of_one_process_spans_is_not_ranks(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    from stepscope.server.logdir import discover
    from stepscope.server.runs import RunStore, rank_files

    run = tmp_path / "r"
    run.mkdir()
    write_capture(run, "first.json", base_us=1e6)  # names say nothing: two "workers"
    write_capture(run, "second.json", base_us=5e6)
    files = rank_files(discover(str(tmp_path)), "r")
    assert len(files) == 2
    store = RunStore(use_cache=False)
    entry = store.get(str(run), [f.path for f in files])
    import time

    deadline = time.monotonic() + 60
    while entry.state not in ("ready", "error") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert entry.state == "error" and "not ranks of a job" in (entry.error or "")


def test_relative_times_compare_only_with_their_base(tmp_path: Path) -> None:
    """PyTorch >= 2.2 writes ts relative to baseTimeNanoseconds, a base each process picks
    when it starts: two runs of a script ten minutes apart have the same relative times.
    Compared with their bases they are one after another (spans), not ranks."""
    from stepscope.formats import load_trace

    a = write_capture(tmp_path, "a.json", base_us=1e6, pid=11, base_time_ns=1_700_000_000 * S)
    write_capture(tmp_path, "b.json", base_us=1e6, pid=12, base_time_ns=1_700_000_600 * S)
    assert load_trace(str(a), use_cache=False).meta.base_time_ns == 1_700_000_000 * S
    report = build_folder_report(find_run([str(tmp_path)]), executor="serial", use_cache=False)
    assert isinstance(report, SpansReport) and report.layout.processes == 2
    assert summarise_folder(str(tmp_path), use_cache=False).kind == "traces"


def test_tensorrt_engines_in_one_folder_are_not_a_run_of_ranks() -> None:
    pytest.importorskip("starlette")
    from stepscope.server.logdir import TraceFile
    from stepscope.server.runs import rank_files

    engines = [TraceFile(id=f"r/{w}", run="r", worker=w, span="", path=f"/x/r/{w}", size=1,
                         kind="tensorrt") for w in ("fp16", "int8")]
    assert rank_files(engines, "r") == []
    traces = [TraceFile(id=f"r/{w}.json", run="r", worker=w, span="", path=f"/x/r/{w}.json",
                        size=1) for w in ("rank0", "rank1")]
    assert len(rank_files(engines + traces, "r")) == 2
