"""stepscope diff on real pairs: ResNet-50 with 0 vs 4 DataLoader workers (V100, Kineto)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import shared_trace

from stepscope.analysis.compare.diff import Diff, diff_runs
from stepscope.analysis.compare.gate import evaluate, parse
from stepscope.cli.main import main
from stepscope.report.diff_load import summarise_folder, summarise_trace

NW0_A = "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NW0_B = "kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz"
NW4_A = "kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz"
NW4_B = "kineto_resnet50/num_workers_4/worker0.1623213129365.pt.trace.json.gz"


def _diff(base: str, new: str) -> Diff:
    return diff_runs(summarise_trace(str(shared_trace(base))),
                     summarise_trace(str(shared_trace(new))))


def test_more_workers_names_the_dataloader() -> None:
    d = _diff(NW0_A, NW4_A)
    assert d.verdict == "improvement"
    assert d.step.base == pytest.approx(177_592, rel=1e-3)  # µs per step, 6 steps each
    assert d.step.new == pytest.approx(141_068, rel=1e-3)
    assert d.step.significance is not None
    assert d.step.significance.p_value == pytest.approx(0.0411, abs=1e-3)  # exact U test
    assert d.main_change == "dataloader"
    loader = next(c for c in d.categories if c.name == "dataloader")
    assert loader.change.delta == pytest.approx(-58_077, rel=0.01)
    assert loader.change.significant is True
    assert loader.share_pct == pytest.approx(159, abs=2)  # other categories grew back
    status = {f.id: f.status for f in d.findings}
    assert status["input-pipeline"] == "resolved"
    assert status["tensor-cores"] == "persisting"
    # the GPU is busier once the loader stops starving it
    util = next(g for g in d.gpu if g.metric == "utilization_pct")
    assert util.delta == pytest.approx(14.76, abs=0.05)


def test_pooled_folders() -> None:
    """Both captures of each setting pooled: 12 steps a side (the 0-worker pair is bimodal,
    so its spread — and the p-value — grow, but the change stays significant)."""
    base = summarise_folder(str(shared_trace("kineto_resnet50/num_workers_0")))
    new = summarise_folder(str(shared_trace("kineto_resnet50/num_workers_4")))
    d = diff_runs(base, new)
    assert (d.base.steps, d.new.steps) == (12, 12)
    assert d.verdict == "improvement" and d.main_change == "dataloader"
    assert d.step.significance is not None and d.step.significance.p_value is not None
    assert d.step.significance.p_value == pytest.approx(0.0284, abs=1e-3)
    assert d.step.significance.noise == pytest.approx(20_539, rel=0.01)
    assert d.step.pct == pytest.approx(-14.6, abs=0.5)


@pytest.mark.parametrize(("base", "new"), [(NW4_A, NW4_B), (NW4_B, NW4_A), (NW0_A, NW0_B)])
def test_captures_of_the_same_workload_pass_the_gate(base: str, new: str) -> None:
    d = _diff(base, new)
    gate = evaluate(d, [parse("step_time>+5%"), parse("category:kernel>+5%"),
                        parse("kernel:*>+5%")])
    assert not any(g.broken for g in gate), [g.reason for g in gate]


def test_the_two_num_workers_0_captures_really_differ() -> None:
    """Same workload, but the second capture's loader is 24 ms/step faster (warm page cache
    or less contention): a real shift, beyond the 5.6 ms step-to-step spread — diff says so."""
    d = _diff(NW0_B, NW0_A)
    assert d.verdict == "regression" and d.main_change == "dataloader"
    assert d.step.pct == pytest.approx(14.6, abs=0.5)
    assert not evaluate(d, [parse("step_time>+20%")])[0].broken
    assert evaluate(d, [parse("step_time>+5%")])[0].broken


def test_cli_baseline_workflow(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """CI: keep a small baseline file, gate every new trace against it."""
    base = tmp_path / "baseline.json"
    a, b = str(shared_trace(NW4_A)), str(shared_trace(NW4_B))
    assert main(["diff", a, a, "--save-baseline", str(base), "--format", "json"]) == 0
    capsys.readouterr()
    assert base.stat().st_size < 400_000
    assert main(["diff", "--baseline", str(base), b, "--fail-on", "step_time>+5%",
                 "--fail-on", "kernel:aten::cudnn_convolution>+10%", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["passed"] is True and doc["warnings"] == []
    nw0 = str(shared_trace(NW0_A))
    assert main(["diff", "--baseline", str(base), nw0, "--fail-on", "step_time>+5%"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "step_time>+5%" in err[0] and "significant" in err[0]


def test_eight_rank_job_folder() -> None:
    """param's 8-rank DLRM traces (one ProfilerStep#10 each): the slowest rank is the step."""
    folder = str(shared_trace("outside/param-dlrm-8rank"))
    run = summarise_folder(folder)
    assert (run.kind, run.ranks, run.world_size, run.steps) == ("ranks", 8, 8, ("10",))
    assert run.step_us == (18_711.0,)  # rank 3; the fastest, rank 7, took 12,509 µs
    d = diff_runs(run, run)
    assert d.verdict == "not testable" and d.step.delta == 0
    assert len({g.device for g in d.gpu}) == 8
    assert not evaluate(d, [parse("step_time>+5%")])[0].broken


def test_the_same_copies_get_one_verdict_in_every_table() -> None:
    """Issue 21: aten::copy_ 1.915 -> 3.160 ms was "unchanged" (p = 0.065) beside the Memcpy
    category with the same copies "significant" (p = 0.0022): its GPU time was sampled by the
    host call's step, so copies queued across a step boundary moved. Now one test, on the
    same samples, gives one verdict, said in the same words."""
    from stepscope.analysis.compare.diff import noise_verdict
    from stepscope.report.json.diff import diff_to_json

    d = _diff(NW0_A, NW4_A)
    memcpy = next(c.change for c in d.categories if c.name == "memcpy")
    copy_ = next(r for r in d.operators if r.name == "aten::copy_")
    assert (copy_.change.base, copy_.change.new) == pytest.approx((1915.333, 3159.833), abs=1e-3)
    assert copy_.status == "slower"
    assert memcpy.significance is not None and copy_.change.significance is not None
    assert copy_.change.significance.p_value == memcpy.significance.p_value
    assert noise_verdict(copy_.change) == noise_verdict(memcpy) == "significant (p = 0.00216)"
    data = diff_to_json(d)
    row = next(r for r in data["operators"] if r["name"] == "aten::copy_")
    cat = next(c for c in data["categories"] if c["name"] == "memcpy")
    assert row["noise_verdict"] == cat["noise_verdict"]
    # an unchanged row says why: the test did not reject
    still = [r for r in data["operators"] if r["status"] == "unchanged"
             and r["significance"] and r["significance"]["p_value"] >= 0.05]
    assert still and all(r["noise_verdict"].startswith("within noise (p = ") for r in still)
