"""Issue 9's corpus test: the JSON report over every Kineto trace under ../shared/traces.

Every folder is searched; the corpus is restricted to the Kineto (PyTorch profiler) JSON
traces, i.e. files ending in .json or .json.gz: nsys/ holds Nsight Systems exports
(.sqlite, .nsys-rep) and tensorrt/ holds TensorRT engine/profile JSONs, which other
readers handle, and hta/memory_analysis/memory_timeline.raw.gz is a memory snapshot.
Each file is read and reported once per module (the ``reports`` fixture).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.conftest import SHARED_TRACES

import stepscope
from stepscope.analysis.trace.breakdown import CATEGORIES
from stepscope.classify.communication import is_communication_kernel
from stepscope.classify.matrix_cores import is_matrix_core_kernel
from stepscope.model.trace import DEV_KERNEL
from stepscope.report.build import build_report

NOT_KINETO = ("nsys", "tensorrt")


def _corpus() -> list[str]:
    if not SHARED_TRACES.exists():
        return []
    out = []
    for p in sorted(SHARED_TRACES.rglob("*")):
        rel = p.relative_to(SHARED_TRACES)
        if rel.parts[0] in NOT_KINETO or not p.name.endswith((".json", ".json.gz")):
            continue
        out.append(str(rel))
    return out


CORPUS = _corpus()


@pytest.fixture(scope="module")
def reports() -> dict[str, tuple[dict[str, Any], set[str], bool]]:
    """rel path -> (JSON report, kernel names, the file names its devices)."""
    if not CORPUS:
        pytest.skip(f"real traces not available: {SHARED_TRACES}")
    out = {}
    for rel in CORPUS:
        trace = stepscope.load(str(SHARED_TRACES / rel), cache=False)
        dev = trace.device
        kernels = {trace.name(int(i)) for i in set(dev.name[dev.kind == DEV_KERNEL].tolist())}
        named = any(d.name for d in trace.meta.devices)
        out[rel] = (build_report(trace).to_json(), kernels, named)
    return out


def test_corpus_is_complete() -> None:
    if not CORPUS:
        pytest.skip(f"real traces not available: {SHARED_TRACES}")
    assert len(CORPUS) == 35  # outside/ gained kernelforge-gh200 and py4ai-rtx3090
    assert {Path(r).parts[0] for r in CORPUS} == {"hta", "kineto_resnet50", "outside"}


def _pct_ok(x: float | None) -> bool:
    return x is None or -1e-6 <= x <= 100.0 + 1e-6


@pytest.mark.parametrize("rel", CORPUS)
def test_every_trace(reports: dict[str, tuple[dict[str, Any], set[str], bool]],
                     rel: str) -> None:
    data, _, named = reports[rel]
    src = data["source"]
    # nothing skipped for field-type reasons: odd fields are repaired, not their events lost
    assert not [k for k in src["skipped"] if "malformed" in k or "type" in k]
    # every device that ran kernels is listed, with its name when the file has one
    listed = {d["id"]: d["name"] for d in data["devices"]}
    for g in data["gpu"]:
        assert g["device"] in listed
        if named:
            assert listed[g["device"]]
    # percentages are percentages
    for v in data["breakdown"]["pct"].values():
        assert _pct_ok(v)
    for g in data["gpu"]:
        for k in ("utilization_pct", "sm_efficiency_pct", "achieved_occupancy_pct",
                  "tensor_core_pct"):
            assert _pct_ok(g[k]), (k, g[k])
    for t in data["temporal"]:
        assert all(_pct_ok(t[k]) for k in ("idle_pct", "compute_pct", "non_compute_pct"))
    c = data["communication"]
    if c is not None:
        assert all(_pct_ok(c[k]) for k in
                   ("share_of_kernel_time_pct", "exposed_pct_of_step", "overlap_pct"))
    if data["warmup"] is not None:
        assert _pct_ok(data["warmup"]["pct_of_window"])
    # the step breakdown sums to the step time (µs rounding of 8 values)
    for s in data["steps"]:
        total = sum(s["breakdown_us"][cat] for cat in CATEGORIES)
        assert total == pytest.approx(s["duration_us"], abs=0.01)
        assert all(v >= -0.001 for v in s["breakdown_us"].values())


# Pinned figures of the outside traces: communication share of kernel time, matrix-core
# share, device names, warm-up (ms), graph launches / capture-only.
V100 = "Tesla V100-SXM2-32GB"
OUTSIDE: dict[str, dict[str, Any]] = {
    "kineto-tbp-2020-12-bare-array/worker0.pt.trace.json.gz":
        {"devices": [(0, "")], "comm": None, "tc": [0.0]},
    "kineto-tbp-test-gpu-metrics/gpu_metrics_input.json":
        {"devices": [(0, "Tesla V100-DGXS-32GB")], "comm": None, "tc": [0.0]},
    "param-dlrm-8rank/worker0_step_12.1694128201545.pt.trace.json":
        {"devices": [(0, V100)], "comm": 84.87, "exposed": 38.31, "tc": [0.0]},
    "param-dlrm-8rank/worker1_step_12.1694128201556.pt.trace.json":
        {"devices": [(1, V100)], "comm": 90.1, "exposed": 59.49, "tc": [0.0]},
    "param-dlrm-8rank/worker2_step_12.1694128201554.pt.trace.json":
        {"devices": [(2, V100)], "comm": 76.58, "exposed": 24.71, "tc": [0.0]},
    "param-dlrm-8rank/worker3_step_12.1694128201557.pt.trace.json":
        {"devices": [(3, V100)], "comm": 88.74, "exposed": 50.51, "tc": [0.0]},
    "param-dlrm-8rank/worker4_step_12.1694128201547.pt.trace.json":
        {"devices": [(4, V100)], "comm": 85.4, "exposed": 36.43, "tc": [0.0]},
    "param-dlrm-8rank/worker5_step_12.1694128201549.pt.trace.json":
        {"devices": [(5, V100)], "comm": 85.72, "exposed": 34.9, "tc": [0.0]},
    "param-dlrm-8rank/worker6_step_12.1694128201553.pt.trace.json":
        {"devices": [(6, V100)], "comm": 77.2, "exposed": 25.12, "tc": [0.0]},
    "param-dlrm-8rank/worker7_step_12.1694128201553.pt.trace.json":
        {"devices": [(7, V100)], "comm": 62.25, "exposed": 12.63, "tc": [0.0]},
    "ptrans-a100-gpu/gpu_working_chrome_trace.json":
        {"devices": [(0, "NVIDIA A100-PCIE-40GB")], "comm": None, "tc": [13.19],
         "warmup_ms": 1723.0},
    "tracelens-b200-eager/eager_trace.json.gz":
        {"devices": [(0, "NVIDIA B200")], "comm": 19.71, "exposed": 2.45, "tc": [74.36]},
    "tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz":
        {"devices": [(0, "NVIDIA H100 80GB HBM3")], "comm": None, "tc": [36.45]},
    "tracelens-mi300-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz":
        {"devices": [(2, "AMD Instinct MI300X VF")], "comm": None, "tc": [52.3]},
    "tracelens-vllm-mi300-graph-capture/graph_capture_rank_0.1773709742341309550.pt.trace"
    ".json.gz": {"devices": [(2, "")], "comm": None, "tc": [0.0], "graphs": (0, True)},
}


@pytest.mark.parametrize("rel", sorted(OUTSIDE))
def test_outside_pinned(reports: dict[str, tuple[dict[str, Any], set[str], bool]],
                        rel: str) -> None:
    data, _, _ = reports["outside/" + rel]
    want = OUTSIDE[rel]
    assert [(d["id"], d["name"]) for d in data["devices"]] == want["devices"]
    c = data["communication"]
    if want["comm"] is None:
        assert c is None
    else:
        assert c["share_of_kernel_time_pct"] == pytest.approx(want["comm"], abs=0.05)
        assert c["exposed_pct_of_step"] == pytest.approx(want["exposed"], abs=0.05)
    assert [g["tensor_core_pct"] for g in data["gpu"]] == pytest.approx(want["tc"], abs=0.05)
    w = data["warmup"]
    if "warmup_ms" in want:
        assert w["duration_us"] / 1000 == pytest.approx(want["warmup_ms"], abs=0.5)
    else:
        assert w is None
    g = data["graphs"]
    if "graphs" in want:
        assert (g["graph_launches"], g["capture_only"]) == want["graphs"]
    else:
        assert g is None or not g["capture_only"]
    assert data["clock_skew"] is None


def test_classifiers_over_every_kernel_name(
    reports: dict[str, tuple[dict[str, Any], set[str], bool]],
) -> None:
    """Both tables over every distinct kernel name in the corpus (pinned counts)."""
    # pinned on the corpus before outside/ gained kernelforge-gh200 and py4ai-rtx3090 (their
    # kernels are pinned by the attribution and matrix-core tests of issue 21)
    later = ("outside/kernelforge-gh200/", "outside/py4ai-rtx3090/")
    names = set().union(*(k for rel, (_, k, _) in reports.items() if not rel.startswith(later)))
    tc = {n for n in names if is_matrix_core_kernel(n)}
    comm = {n for n in names if is_communication_kernel(n)}
    assert len(names) == 703
    assert len(tc) == 110
    assert len(comm) == 7
    assert not tc & comm
    assert all(n.startswith(("nccl", "void (anonymous namespace)::multimem_")) for n in comm)
    # SIMT GEMMs of the same libraries stay off the Tensor Core side
    assert not {n for n in tc if "sgemm" in n and "tensorop" not in n}
    # the outside traces' headline kernels
    assert any(n.startswith("Cijk_") and "_MI16x16x1_" in n for n in tc)
    assert any(n.startswith("bmm_MxE4m3_MxE2m1") for n in tc)
    assert any(n.startswith("nvjet_tst_") for n in tc)
    assert "attn_fwd" in tc


def test_outside_advice(reports: dict[str, tuple[dict[str, Any], set[str], bool]]) -> None:
    """DLRM rank 1 (62 % of the step exposed communication): the host blocks in
    cudaStreamSynchronize for the collectives' results, so overlapping communication alone
    barely shortens the replayed step (the host still waits) and the syncs rank first; this
    capture holds one step, so host-sync keeps its bound (docs/whatif.md)."""
    data, _, _ = reports["outside/param-dlrm-8rank/worker1_step_12.1694128201556.pt.trace.json"]
    by_id = {f["id"]: f for f in data["findings"]}
    assert data["findings"][0]["id"] == "host-sync"
    assert by_id["host-sync"]["estimated_saving"]["method"] == "bound"
    comm = by_id["exposed-communication"]["estimated_saving"]
    assert comm["method"] == "replay" and comm["us_per_step"] < 0.1 * 11_056
    b200, _, _ = reports["outside/tracelens-b200-eager/eager_trace.json.gz"]
    assert "low-occupancy" not in [f["id"] for f in b200["findings"]]
    cap, _, _ = reports["outside/tracelens-vllm-mi300-graph-capture/graph_capture_rank_0"
                        ".1773709742341309550.pt.trace.json.gz"]
    assert "gpu-gaps" not in [f["id"] for f in cap["findings"]]
    pt, _, _ = reports["outside/ptrans-a100-gpu/gpu_working_chrome_trace.json"]
    assert pt["breakdown"]["pct"]["runtime"] < 5  # was 74 % with the warm-up inside
    assert "warmup-in-window" in [f["id"] for f in pt["findings"]]
