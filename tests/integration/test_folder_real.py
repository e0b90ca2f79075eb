"""`report DIR` on real folders (issue 21, item 10): a folder of ranks gets the run view, a
folder of captures of one process that process's findings, the same as each file alone."""

from __future__ import annotations

import pytest
from tests.conftest import shared_trace

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from stepscope.report.diff_load import summarise_folder
from stepscope.report.run import RunReport, build_folder_report, find_run
from stepscope.report.spans import SpansReport

RESNET = "kineto_resnet50"
FILES = {
    "num_workers_0": ("worker0.1623143089861.pt.trace.json.gz",
                      "worker0.1623143566756.pt.trace.json.gz"),
    "num_workers_4": ("worker0.1623212756351.pt.trace.json.gz",
                      "worker0.1623213129365.pt.trace.json.gz"),
}
# the pid of the training process, in both captures (torch.profiler writes the OS pid)
PIDS = {"num_workers_0": "25738", "num_workers_4": "5555"}


def _folder(name: str) -> SpansReport | RunReport:
    return build_folder_report(find_run([str(shared_trace(f"{RESNET}/{name}"))]),
                               executor="serial")


@pytest.mark.parametrize("name", list(FILES))
def test_captures_of_one_worker_get_that_process_findings(name: str) -> None:
    report = _folder(name)
    assert isinstance(report, SpansReport)  # was: "2 ranks", no finding at all
    assert report.layout.process == f"worker0 (pid {PIDS[name]})"
    assert [s.steps for s in report.spans] == [6, 6]
    alone = [build_report(load_trace(str(shared_trace(f"{RESNET}/{name}/{f}")))).findings
             for f in FILES[name]]
    # every finding either file has alone, with the larger saving of the two
    want = {}
    for findings in alone:
        for f in findings:
            want[f.id] = max(want.get(f.id, 0.0), f.saving_us)
    assert {f.id: f.saving_us for f in report.findings} == want
    doc = report.to_json()
    assert doc["source"]["format"] == "spans" and "distributed" not in doc
    assert not {f["id"] for f in doc["findings"]} & {"rank-imbalance", "straggler"}


def test_num_workers_0_keeps_its_dataloader_finding() -> None:
    report = _folder("num_workers_0")
    assert isinstance(report, SpansReport)
    top = report.findings[0]
    assert (top.id, top.severity) == ("input-pipeline", "high")
    # replayed (docs/whatif.md): batches ready, capture 1's step 177.59 -> 118.61 ms
    assert top.saving_us == pytest.approx(58984.667, abs=0.01)  # capture 1's, the larger
    assert top.evidence[0] == ("found in 2 of 2 captures (saving 58.98 ms, 35.19 ms per step); "
                               "evidence below from capture 1 "
                               "(worker0.1623143089861.pt.trace.json.gz), where it saves most")
    doc = report.to_json()
    assert doc["findings"][0]["spans"] == [0, 1]
    assert [s["mean_step_us"] for s in doc["spans"]] == [177592.167, 154911.333]
    # num_workers=4 has no DataLoader finding in either file, nor in the folder
    assert "input-pipeline" not in {f.id for f in _folder("num_workers_4").findings}


def test_diff_reads_the_folders_as_report_does() -> None:
    s = summarise_folder(str(shared_trace(f"{RESNET}/num_workers_0")))
    assert (s.kind, s.ranks, s.n_steps) == ("traces", 1, 12)  # the two spans pooled


def test_a_folder_of_ranks_keeps_the_run_view() -> None:
    folder = str(shared_trace("outside/param-dlrm-8rank"))
    report = build_folder_report(find_run([folder]), executor="serial")
    assert isinstance(report, RunReport)
    d = report.distributed
    assert (d.world_size, d.rank_source) == (8, "distributedInfo")
    s = summarise_folder(folder)
    assert (s.kind, s.ranks) == ("ranks", 8)
