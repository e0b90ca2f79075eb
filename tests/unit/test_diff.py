"""stepscope diff: significance, matching, the gate and the CLI on synthetic pairs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.diff_builders import MM_US, training_trace

from stepscope.analysis.compare.diff import diff_runs, normalise
from stepscope.analysis.compare.gate import evaluate, parse
from stepscope.analysis.compare.significance import (
    compare_rows,
    compare_samples,
    mann_whitney,
    mann_whitney_rows,
    robust_sd,
    t_two_sided,
    welch,
)
from stepscope.cli.main import main
from stepscope.errors import UsageError
from stepscope.report.diff_load import summarise_folder, summarise_trace
from stepscope.report.json.diff import diff_to_json


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("pair")
    return {
        "base": training_trace(d, "base.json", seed=1),
        "slow": training_trace(d, "slow.json", seed=2, mm_scale=1.3),
        "same": training_trace(d, "same.json", seed=3),
    }


# ---------------------------------------------------------------- statistics


def test_mann_whitney_exact_values() -> None:
    a = np.arange(1.0, 11.0)
    # complete separation of 10 vs 10: two-sided p = 2 / C(20, 10)
    assert mann_whitney(a, a + 10) == pytest.approx(2 / 184756)
    # 6 vs 6 with one overlap (U = 1): p = 2 * 2 / C(12, 6)
    b = np.array([1.0, 2, 3, 4, 5, 6.5])
    c = np.array([6.0, 7, 8, 9, 10, 11])
    assert mann_whitney(b, c) == pytest.approx(4 / 924)
    assert mann_whitney(a, a) == pytest.approx(1.0)


def test_exact_p_matches_enumerating_every_split() -> None:
    import itertools

    rng = np.random.default_rng(5)
    for n, m in ((4, 4), (3, 6), (5, 4)):
        x = rng.normal(size=n + m)
        x[:n] += 0.8
        pooled = np.sort(x)

        us = np.array([
            float((pooled[list(c)][:, None] > np.delete(pooled, list(c))[None, :]).sum())
            for c in itertools.combinations(range(n + m), n)
        ])
        u = float((x[:n, None] > x[None, n:]).sum())
        lo = min(u, n * m - u)
        brute = min(1.0, 2.0 * float(np.mean(us <= lo)))
        assert mann_whitney(x[:n], x[n:]) == pytest.approx(brute)


def test_row_batches_match_single_tests() -> None:
    rng = np.random.default_rng(7)
    for n, m in ((6, 6), (40, 35), (3, 3)):
        base = np.round(rng.normal(100, 5, (50, n)))  # rounded: ties in some rows
        new = np.round(rng.normal(103, 5, (50, m)))
        rows = compare_rows(base, new)
        for i in range(0, 50, 7):
            one = compare_samples(base[i], new[i], interval=False)
            assert rows[i] == one
        assert mann_whitney_rows(base, new)[3] == pytest.approx(mann_whitney(base[3], new[3]))


def test_mann_whitney_ties_use_the_normal_approximation() -> None:
    a = np.array([1.0, 1, 2, 2, 3, 3, 4, 4])
    b = np.array([3.0, 3, 4, 4, 5, 5, 6, 6])
    # U = 8; tie term sum(t^3 - t) / (N (N - 1)) = 144 / 240; var = 64 / 12 * (17 - 0.6)
    # z = (|8 - 32| - 0.5) / sqrt(87.47) = 2.5128, two-sided p = erfc(z / sqrt 2)
    assert mann_whitney(a, b) == pytest.approx(0.011980, abs=1e-5)


def test_welch_t_for_captures_too_short_for_the_rank_test() -> None:
    # Student's t critical values: the two-sided p is 0.05 exactly
    assert t_two_sided(2.776445, 4) == pytest.approx(0.05, abs=1e-6)
    assert t_two_sided(12.7062, 1) == pytest.approx(0.05, abs=1e-5)
    assert t_two_sided(1.959964, 1e6) == pytest.approx(0.05, abs=1e-5)
    base = np.array([75.0, 76.0, 74.5])
    new = np.array([24.0, 25.0, 24.5])
    assert mann_whitney(base, new) == pytest.approx(0.1)  # the best 3 vs 3 can do
    sig = compare_samples(base, new)
    assert sig.test == "welch-t" and sig.significant is True
    assert sig.p_value == pytest.approx(welch(base, new))
    assert sig.p_value is not None and sig.p_value < 1e-4
    assert compare_samples(np.arange(4.0), np.arange(4.0) + 9).test == "mann-whitney"


def test_noise_floor_refuses_small_but_consistent_changes() -> None:
    rng = np.random.default_rng(0)
    base = 100.0 + rng.normal(0, 5, 40)
    new = base + 2.0  # shifted by less than the 5 µs step-to-step spread
    sig = compare_samples(base, new)
    assert sig.p_value is not None and sig.noise == pytest.approx(robust_sd(base), rel=0.01)
    assert sig.significant is False  # too small to call, whatever the p-value
    big = compare_samples(base, base + 20.0)
    assert big.significant is True and big.p_value is not None and big.p_value < 1e-6
    assert big.ci_low is not None and big.ci_high is not None
    assert big.ci_low < 20.0 < big.ci_high + 1e-9
    few = compare_samples(base[:2], new[:2])
    assert few.significant is None and few.p_value is None


# ---------------------------------------------------------------- the diff


def test_injected_kernel_slowdown_is_found_and_attributed(pair: dict[str, Path]) -> None:
    diff = diff_runs(summarise_trace(str(pair["base"])), summarise_trace(str(pair["slow"])))
    assert diff.verdict == "regression"
    assert diff.step.delta == pytest.approx(0.3 * MM_US, rel=0.15)
    assert diff.main_change == "kernel"
    top = diff.kernels[0]
    assert (top.name, top.status) == ("sgemm_kernel", "slower")
    assert top.change.pct == pytest.approx(30.0, abs=4.0)
    assert top.share_pct == pytest.approx(100.0, abs=10.0)
    assert top.change.significant is True
    relu = next(k for k in diff.kernels if k.name == "relu_kernel")
    assert relu.status == "unchanged"
    assert diff.operators[0].name == "aten::mm" and diff.operators[0].status == "slower"
    # the eight category shares explain the whole step-time change
    shares = [c.share_pct for c in diff.categories if c.share_pct is not None]
    assert sum(shares) == pytest.approx(100.0, abs=0.01)
    gate = evaluate(diff, [parse("step_time>+5%"), parse("kernel:sgemm_kernel>+10%"),
                           parse("kernel:relu_kernel>+10%"), parse("kernel:*_kernel>+10%")])
    assert [g.broken for g in gate] == [True, True, False, True]


def test_two_captures_of_the_same_workload_pass_the_gate(pair: dict[str, Path]) -> None:
    diff = diff_runs(summarise_trace(str(pair["base"])), summarise_trace(str(pair["same"])))
    assert diff.verdict == "no significant change"
    assert diff.main_change is None
    assert all(k.status == "unchanged" for k in diff.kernels)
    gate = evaluate(diff, [parse("step_time>+1%"), parse("kernel:sgemm_kernel>+1%"),
                           parse("category:kernel>+1%"), parse("findings:new>0")])
    assert not any(g.broken for g in gate)


def test_runs_without_steps_are_not_testable(tmp_path: Path) -> None:
    """One whole-trace step a side: no noise estimate, so thresholds alone decide."""
    from tests.builders import TraceBuilder

    paths = []
    for i, dur in enumerate((400.0, 480.0)):
        b = TraceBuilder()
        op = b.op("aten::mm", 10, 20)
        b.launch(op, "cudaLaunchKernel", 12, 3, kernel="sgemm_kernel", k_ts=40, k_dur=dur)
        paths.append(b.write(tmp_path, f"t{i}.json"))
    diff = diff_runs(summarise_trace(str(paths[0])), summarise_trace(str(paths[1])))
    assert diff.verdict == "not testable" and diff.main_change == "kernel"
    assert diff.kernels[0].change.delta == pytest.approx(80.0)
    g = evaluate(diff, [parse("step_time>+5%")])[0]
    assert g.broken and g.significant is None
    assert "noise not checked (1 step in a run; 3 needed)" in g.reason


def test_normalised_names_match_the_dataloader_iterators() -> None:
    single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    multi = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"
    assert normalise(single) == normalise(multi) == "enumerate(DataLoader).__next__"
    assert normalise("void  foo<int>(int)") == "foo<int>(int)"
    assert normalise("ProfilerStep#12") == "ProfilerStep#*"


# ---------------------------------------------------------------- gate expressions


@pytest.mark.parametrize(
    ("text", "metric", "op", "value", "relative"),
    [
        ("step_time>+5%", "step_time", ">", 5.0, True),
        ("kernel:aten::mm>+10%", "kernel:aten::mm", ">", 10.0, True),
        ("kernel:foo<float>>=2ms", "kernel:foo<float>", ">=", 2000.0, False),
        ("category:dataloader > 300us", "category:dataloader", ">", 300.0, False),
        ("gpu:utilization_pct<-5", "gpu:utilization_pct", "<", -5.0, False),
        ("op:aten::add_>0.5s", "op:aten::add_", ">", 500000.0, False),
    ],
)
def test_gate_expressions_parse(
    text: str, metric: str, op: str, value: float, relative: bool
) -> None:
    t = parse(text)
    assert (t.metric, t.op, t.value, t.relative) == (metric, op, pytest.approx(value), relative)


@pytest.mark.parametrize("text", ["step_time", "step_time>>5", "speed>5%", "kernel>5%", ">5%"])
def test_bad_gate_expressions_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse(text)


def test_gate_on_unknown_names_is_an_error(pair: dict[str, Path]) -> None:
    diff = diff_runs(summarise_trace(str(pair["base"])), summarise_trace(str(pair["same"])))
    for text in ("kernel:nope>1%", "category:gpu>1%", "gpu:flops>1"):
        with pytest.raises(UsageError):
            evaluate(diff, [parse(text)])


# ---------------------------------------------------------------- CLI, JSON, baselines


def test_cli_exit_codes_and_reasons(
    pair: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    base, slow, same = (str(pair[k]) for k in ("base", "slow", "same"))
    assert main(["diff", base, slow, "--fail-on", "step_time>+5%",
                 "--fail-on", "kernel:relu_kernel>+10%"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("stepscope diff: FAIL step_time>+5%: step time +")
    assert main(["diff", base, same, "--fail-on", "step_time>+5%"]) == 0
    assert capsys.readouterr().err == ""


def test_json_contract(pair: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(pair["base"]), str(pair["slow"]), "--format", "json",
                 "--fail-on", "step_time>+5%"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "stepscope.diff/1"
    assert set(doc) >= {"base", "new", "step_time", "main_change", "categories", "operators",
                        "operators_by_shape", "kernels", "findings", "gpu", "gate", "passed",
                        "warnings", "alpha"}
    assert doc["step_time"]["verdict"] == "regression"
    assert doc["step_time"]["significance"]["significant"] is True
    assert doc["kernels"][0]["name"] == "sgemm_kernel"
    assert doc["kernels"][0]["status"] == "slower"
    assert doc["operators_by_shape"][0]["input_shape"] == "[[64,64],[64,64]]"
    assert doc["gate"][0]["broken"] is True and doc["passed"] is False
    assert [c["name"] for c in doc["categories"]][:2] == ["kernel", "memcpy"]


def test_saved_baseline_round_trip(pair: dict[str, Path], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """--save-baseline writes a complete report; --baseline reads it like the trace itself."""
    out = tmp_path / "baseline.json"
    assert main(["diff", str(pair["same"]), str(pair["base"]), "--save-baseline", str(out)]) == 0
    capsys.readouterr()
    saved = json.loads(out.read_text())
    assert saved["schema"] == "stepscope.report/1" and saved["complete_tables"] is True
    assert len(saved["kernel_steps"]["sgemm_kernel"]) == 8
    assert main(["diff", "--baseline", str(out), str(pair["slow"]), "--format", "json",
                 "--fail-on", "kernel:sgemm_kernel>+10%"]) == 1
    from_baseline = json.loads(capsys.readouterr().out)
    assert main(["diff", str(pair["base"]), str(pair["slow"]), "--format", "json"]) == 0
    from_trace = json.loads(capsys.readouterr().out)
    assert from_baseline["warnings"] == []
    for key in ("step_time", "categories", "kernels", "operators"):
        assert from_baseline[key] == from_trace[key], key
    # a plain `stepscope report --format json` works too, with a warning about cut tables
    assert main(["report", str(pair["base"]), "--format", "json", "--top", "3"]) == 0
    plain = tmp_path / "plain.json"
    plain.write_text(capsys.readouterr().out)
    assert main(["diff", "--baseline", str(plain), str(pair["same"]), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any("saved report" in w for w in doc["warnings"])
    assert doc["step_time"]["verdict"] == "no significant change"


def test_rank_folders_combine_step_by_step(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """A 2-rank job: a straggler rank sets the step time; kernels are per-rank means."""
    base, new = tmp_path / "base", tmp_path / "new"
    base.mkdir()
    new.mkdir()
    for r in (0, 1):
        training_trace(base, f"rank{r}.json", seed=20 + r, rank=r)
        training_trace(new, f"rank{r}.json", seed=30 + r, rank=r, mm_scale=1.5 if r else 1.0)
    assert main(["diff", str(base), str(new), "--format", "json",
                 "--fail-on", "step_time>+10%"]) == 1
    capsys.readouterr()
    b, n = summarise_folder(str(base)), summarise_folder(str(new))
    assert (b.kind, b.ranks, b.n_steps) == ("ranks", 2, 8)
    one = summarise_trace(str(new / "rank1.json"))
    assert n.step_us == one.step_us  # rank 1 is slowest in every step
    diff = diff_runs(b, n)
    assert diff.verdict == "regression" and diff.main_change == "kernel"
    top = diff.kernels[0]
    assert top.name == "sgemm_kernel" and top.change.significant is True
    assert top.change.pct == pytest.approx(25.0, abs=3.0)  # +50 % on one rank of two
    assert [g.device for g in diff.gpu][:1] == ["0:0"]


def test_rank_folder_against_one_trace_is_incompatible(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "job"
    job.mkdir()
    for r in (0, 1):
        training_trace(job, f"rank{r}.json", seed=r, rank=r)
    single = training_trace(tmp_path, "single.json", seed=3)
    assert main(["diff", str(job), str(single)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "incompatible runs" in err and "2-rank job" in err


def test_bad_rank_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Two captures of rank 0 beside rank 1: neither one run of ranks nor one process."""
    twice = tmp_path / "twice"
    twice.mkdir()
    training_trace(twice, "a.json", seed=1, rank=0)
    training_trace(twice, "b.json", seed=2, rank=0)
    training_trace(twice, "c.json", seed=4, rank=1)
    single = training_trace(tmp_path, "single.json", seed=3)
    assert main(["diff", str(twice), str(single)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "2 captures of rank 0 of 2" in err


def test_captures_of_one_rank_pool(tmp_path: Path) -> None:
    """Two captures of rank 0 (same rank, two spans) are one process's spans: pooled, as
    `report DIR` reads them (report/folder.py), not refused and not two ranks."""
    twice = tmp_path / "twice"
    twice.mkdir()
    training_trace(twice, "a.json", seed=1, rank=0)
    training_trace(twice, "b.json", seed=2, rank=0)
    s = summarise_folder(str(twice))
    assert (s.kind, s.ranks, s.n_steps) == ("traces", 1, 16)


def test_mixed_folder_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    training_trace(mixed, "rank0.json", seed=1, rank=0)
    training_trace(mixed, "alone.json", seed=2)
    assert main(["diff", str(mixed), str(mixed)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "mixes traces of a distributed job" in err
    assert main(["report", str(mixed)]) == 2  # report DIR refuses it the same way
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "mixes traces of a distributed job" in err


def test_diff_to_json_has_no_numpy_types(pair: dict[str, Path]) -> None:
    diff = diff_runs(summarise_trace(str(pair["base"])), summarise_trace(str(pair["slow"])))
    json.dumps(diff_to_json(diff))  # plain Python values only


def test_folders_pool_captures(pair: dict[str, Path], tmp_path: Path,
                               capsys: pytest.CaptureFixture[str]) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    training_trace(a, "r1.json", seed=11)
    training_trace(a, "r2.json", seed=12)
    training_trace(b, "r1.json", seed=13, mm_scale=1.2)
    training_trace(b, "r2.json", seed=14, mm_scale=1.2)
    assert main(["diff", str(a), str(b), "--format", "json",
                 "--fail-on", "kernel:sgemm_kernel>+10%"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["base"]["steps"] == 16 and doc["base"]["kind"] == "traces"
    assert doc["kernels"][0]["significance"]["n_base"] == 16
    assert doc["kernels"][0]["delta_pct"] == pytest.approx(20.0, abs=3.0)
