"""The efficiency rules (low-mfu, matmul-alignment): each fires and stays silent."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.builders import TraceBuilder

from stepscope.advice import Finding, advise
from stepscope.analysis.suite import run_analyses

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_cublas"


def _matmul_steps(tmp_path: Path, m: int, k: int, n: int, *, k_dur: float,
                  step_us: float, steps: int = 3) -> list[Finding]:
    """Steps of one bf16 mm each, its kernel ``k_dur`` µs, the GPU idle otherwise."""
    b = TraceBuilder()
    for i in range(steps):
        t0 = i * step_us
        with b.step(i + 1, t0, step_us):
            mm = b.op("aten::mm", t0 + 1, 5, input_dims=[[m, k], [k, n]],
                      input_types=["c10::BFloat16", "c10::BFloat16"])
            b.launch(mm, "cudaLaunchKernel", t0 + 2, 2, kernel=GEMM, k_ts=t0 + 10,
                     k_dur=k_dur)
    return advise(run_analyses(b.load(tmp_path)))


def _get(fs: list[Finding], rule: str) -> Finding | None:
    return next((f for f in fs if f.id == rule), None)


def test_low_mfu_fires_with_its_reasons(tmp_path: Path) -> None:
    # 2*4096^3 FLOP in 1 ms steps: 137 TFLOP/s = 13.9 % of the H100's 989.5 bf16 peak,
    # the kernel itself at 2*4096^3 / 0.5 ms = 27.8 % of peak
    f = _get(_matmul_steps(tmp_path, 4096, 4096, 4096, k_dur=500, step_us=1000), "low-mfu")
    assert f is not None
    assert "13.9 %" in f.title
    assert any("aten::mm (bf16): 28 % of peak compute" in e for e in f.evidence)
    # at 70 % of the roofline the kernel would take 2*4096^3/989.5e12/0.7 = 198 µs
    assert f.saving_us == pytest.approx(500 - 2 * 4096**3 / 989.5e12 / 0.7 * 1e6, rel=0.01)


def test_low_mfu_silent_when_matmuls_fill_the_step(tmp_path: Path) -> None:
    # 2*8192^3 FLOP per 1.5 ms step: 74 % MFU
    fs = _matmul_steps(tmp_path, 8192, 8192, 8192, k_dur=1400, step_us=1500)
    assert _get(fs, "low-mfu") is None


def test_matmul_alignment_fires_on_odd_dimensions(tmp_path: Path) -> None:
    f = _get(_matmul_steps(tmp_path, 4096, 4100, 50257, k_dur=5000, step_us=6000),
             "matmul-alignment")
    assert f is not None
    assert any("K=4100" in e and "N=50257" in e for e in f.evidence)
    assert f.saving_us == pytest.approx(5000 * (1 - 1 / 1.4), rel=0.01)


def test_matmul_alignment_silent_on_aligned_shapes(tmp_path: Path) -> None:
    fs = _matmul_steps(tmp_path, 4096, 4096, 50304, k_dur=5000, step_us=6000)
    assert _get(fs, "matmul-alignment") is None
