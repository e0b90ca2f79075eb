"""Issue 21 items 2-4 on real traces: matrix-core share, the MFU dtype and MFU, and the
Tensor Core / MFU / module advice that fits each run's vendor, dtypes and compilation."""

from __future__ import annotations

from typing import Any

import pytest
from tests.conftest import SHARED_TRACES

import stepscope
from stepscope.advice import Finding, advise
from stepscope.analysis.suite import run_analyses
from stepscope.report.build import build_report

OUT = SHARED_TRACES / "outside"
# file -> (matrix-core share %, MFU dtype, MFU %, the tensor-cores rule fires on its own
# bound). The report itself can still drop it: on the GH200 capture the replay shows the
# step is host-bound (1.12 ms of CPU path), so faster GEMMs would not shorten it.
PINS: dict[str, tuple[float, str, float, bool]] = {
    # FP32 GEMMs in sm80_xmma_*_ffma_* kernels: CUDA cores; MFU against the 67 TFLOP/s FP32
    # peak of the GH200 (it read 87.89 % Tensor Core share and 2.3 % of the TF32 peak)
    "kernelforge-gh200/192-222-51-72_4336.1774353536539013415.pt.trace.json":
        (0.0, "fp32", 17.193, True),
    "tracelens-b200-eager/eager_trace.json.gz": (74.36, "bf16", 0.12, False),
    "tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz":
        (36.45, "bf16", 16.561, False),
    "tracelens-mi300-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz":
        (52.3, "bf16", 13.065, False),
}
_CACHE: dict[str, dict[str, Any]] = {}


def _report(rel: str) -> dict[str, Any]:
    if rel not in _CACHE:
        path = OUT / rel
        if not path.exists():
            pytest.skip(f"real trace not available: {path}")
        _CACHE[rel] = build_report(stepscope.load(str(path), cache=False)).to_json()
    return _CACHE[rel]


def _rule_finding(rel: str, rule: str) -> Finding | None:
    """The rule's own finding (its bound, no replay): what its premise checks decide."""
    analyses = run_analyses(stepscope.load(str(OUT / rel), cache=False))
    return next((f for f in advise(analyses, replay=False) if f.id == rule), None)


def _finding(data: dict[str, Any], rule: str) -> dict[str, Any] | None:
    return next((f for f in data["findings"] if f["id"] == rule), None)


def _text(f: dict[str, Any]) -> str:
    return " ".join([f["title"], f["fix"]["text"], f["fix"]["code"] or "", *f["evidence"]])


@pytest.mark.parametrize("rel", sorted(PINS))
def test_matrix_share_mfu_dtype_and_tensor_core_rule(rel: str) -> None:
    data = _report(rel)
    share, dtype, mfu, fires = PINS[rel]
    assert [g["tensor_core_pct"] for g in data["gpu"]] == pytest.approx([share], abs=0.01)
    e = data["efficiency"]
    assert e["mfu_dtype"] == dtype
    assert e["mfu_pct"] == pytest.approx(mfu, abs=0.001)
    assert (_rule_finding(rel, "tensor-cores") is not None) == fires
    if not fires:
        assert _finding(data, "tensor-cores") is None


def test_gh200_fp32_gemms_are_compute_bound_and_get_the_tf32_fix() -> None:
    data = _report(next(r for r in PINS if r.startswith("kernelforge")))
    ops = {r["name"]: r for r in data["efficiency"]["operators"]}
    assert ops["aten::addmm"]["dtype"] == "fp32"
    assert ops["aten::addmm"]["bound"] == "compute"  # "memory" against the TF32 peak
    rel = next(r for r in PINS if r.startswith("kernelforge"))
    f = _rule_finding(rel, "tensor-cores")
    assert f is not None
    assert f.title == ("Matmuls/convolutions run in FP32 on CUDA cores: enable TF32 or "
                       "bf16 autocast")
    assert "allow_tf32" in (f.code or "")
    kernels = [e for e in f.evidence if e.startswith("kernel ")]
    # FP32 cuBLAS GEMMs on the FMA path (names shortened at "_" boundaries)
    assert kernels and all("sm80_xmma_gemm_f32f32" in e and "ffma" in e for e in kernels)
    # the replay: the GEMMs are off the host-bound step's critical path, so the report drops it
    assert _finding(data, "tensor-cores") is None
    mfu = _finding(data, "low-mfu")
    assert mfu is not None and "of the fp32 peak 67 TFLOP/s" in mfu["evidence"][0]


@pytest.mark.parametrize("rel", [r for r in PINS if "mi300" in r or "h100" in r])
def test_bf16_runs_get_no_precision_advice(rel: str) -> None:
    data = _report(rel)
    for f in data["findings"]:
        text = _text(f)
        assert "allow_tf32" not in text and "set_float32_matmul_precision" not in text
        assert "autocast" not in text, f["id"]
        if "mi300" in rel:
            assert "compute capability" not in text and "Tensor Core" not in text
    mfu = _finding(data, "low-mfu")
    assert mfu is not None
    if "mi300" in rel:
        assert "TunableOp" in mfu["fix"]["text"]
