"""Efficiency: the peak table, work models per family, attribution, roofline, MFU, CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.builders import TraceBuilder

from stepscope.analysis.efficiency.roofline import Overrides
from stepscope.analysis.efficiency.work import causal_fraction, decode, model_op
from stepscope.analysis.suite import run_analyses
from stepscope.classify.gpu_peaks import TABLE, match_peak
from stepscope.cli.main import main

GIB = 1024**3


@pytest.mark.parametrize(("name", "memory_gib", "key"), [
    ("Tesla V100-SXM2-32GB", 32, "V100 SXM2"),
    ("Tesla V100-DGXS-32GB", 32, "V100 SXM2"),
    ("Tesla V100-PCIE-16GB", 16, "V100 PCIe"),
    ("Tesla T4", 15, "T4"),
    ("NVIDIA A10", 22, "A10"),
    ("NVIDIA A100-SXM4-80GB", 79, "A100 SXM 80GB"),
    ("NVIDIA A100-PG509-200", 39, "A100 SXM 40GB"),
    ("NVIDIA A100-PCIE-40GB", 39, "A100 PCIe 40GB"),
    ("NVIDIA A100 80GB PCIe", 79, "A100 PCIe 80GB"),
    ("NVIDIA L4", 22, "L4"),
    ("NVIDIA L40S", 44, "L40S"),
    ("NVIDIA H100 80GB HBM3", 79, "H100 SXM"),
    ("NVIDIA H100 PCIe", 79, "H100 PCIe"),
    ("NVIDIA H100 NVL", 93, "H100 NVL"),
    ("NVIDIA H200", 140, "H200 SXM"),
    ("NVIDIA H800", 79, "H800 SXM"),
    ("NVIDIA GH200 480GB", 94, "GH200 96GB HBM3"),
    ("NVIDIA B200", 178, "B200"),
    ("AMD Instinct MI210", 64, "MI210"),
    ("AMD Instinct MI250X", 64, "MI250X (one GCD)"),
    ("AMD Instinct MI300X VF", 191, "MI300X"),
    ("AMD Instinct MI325X", 256, "MI325X"),
    ("NVIDIA GeForce RTX 3090", 24, "RTX 3090"),
    ("NVIDIA GeForce RTX 4090", 24, "RTX 4090"),
    ("NVIDIA GeForce RTX 5090", 32, "RTX 5090"),
])
def test_peak_table_matches_device_names(name: str, memory_gib: int, key: str) -> None:
    m = match_peak(name, total_memory=memory_gib * GIB)
    assert m is not None and m.peak.key == key and m.how == "name"


def test_peak_table_rows_are_documented_and_dense() -> None:
    for row in TABLE:
        assert row.source and row.gbps > 0
        # dense figures: lower precisions are never slower than higher ones on one part
        mat = [v for v in (row.tf32, row.bf16, row.fp8, row.fp4) if v is not None]
        assert mat == sorted(mat), row.key
    h100 = match_peak("NVIDIA H100 80GB HBM3")
    assert h100 is not None and h100.peak.bf16 == 989.5 and h100.peak.gbps == 3350


@pytest.mark.parametrize(("name", "memory_gib"), [
    ("NVIDIA GeForce RTX 4090 D", 24),
    ("NVIDIA GeForce RTX 4090 Laptop GPU", 16),
    ("NVIDIA GeForce RTX 4080 SUPER", 16),
    ("NVIDIA GeForce RTX 4070 Ti SUPER", 16),
    ("NVIDIA GeForce RTX 4070 SUPER", 12),
    ("NVIDIA GeForce RTX 3080", 12),
    ("NVIDIA GeForce RTX 3070 Ti", 8),
    ("NVIDIA GeForce RTX 3060 Ti", 8),
    ("NVIDIA GeForce RTX 3060", 8),
    ("NVIDIA GeForce RTX 5090 D", 32),
])
def test_geforce_variants_do_not_take_the_base_models_row(name: str, memory_gib: int) -> None:
    # other core counts, clocks or buses than the row's card: unknown beats a wrong peak
    assert match_peak(name, total_memory=memory_gib * GIB) is None


def test_geforce_peaks_use_fp32_accumulate_lines() -> None:
    rtx5090 = match_peak("NVIDIA GeForce RTX 5090", total_memory=32 * GIB)
    assert rtx5090 is not None
    # RTX Blackwell whitepaper, Table 3: BF16 and FP8 "with FP32 Accumulate" 209.5 and 419;
    # FP4 has only an FP32-accumulate line, 1676 dense (3352 sparse), not halved
    assert (rtx5090.peak.bf16, rtx5090.peak.fp8, rtx5090.peak.fp4) == (209.5, 419, 1676)
    rtx4090 = match_peak("NVIDIA GeForce RTX 4090", total_memory=24 * GIB)
    assert rtx4090 is not None and (rtx4090.peak.bf16, rtx4090.peak.fp8) == (165.2, 330.3)


def test_amd_signature_and_unknown_devices() -> None:
    m = match_peak("AMD Radeon Graphics", total_memory=64 * GIB, compute=(9, 0), num_sms=104)
    assert m is not None and m.how == "signature" and m.peak.key == "MI210"
    m = match_peak("", total_memory=192 * GIB, compute=(9, 4), num_sms=304)
    assert m is not None and m.peak.key == "MI300X"
    assert match_peak("NVIDIA Quadro K600") is None
    assert match_peak("Some Radeon Graphics", compute=(11, 0), num_sms=48) is None


def _work(name: str, dims: list[object], types: list[str], concrete: list[str] | None = None,
          strides: list[object] | None = None) -> tuple[str, float, float] | None:
    rec = decode(name, json.dumps(dims), json.dumps(types),
                 json.dumps(concrete or [""] * len(dims)), json.dumps(strides or []))
    w = model_op(rec)
    return None if w is None else (w.family, w.flops, w.bytes)


def test_matmul_family_formulas() -> None:
    assert _work("aten::mm", [[8, 16], [16, 32]], ["c10::BFloat16"] * 2) == (
        "matmul", 2 * 8 * 16 * 32, (8 * 16 + 16 * 32 + 8 * 32) * 2)
    assert _work("aten::bmm", [[4, 8, 16], [4, 16, 2]], ["float"] * 2)[1] == 2 * 4 * 8 * 16 * 2
    assert _work("aten::addmm", [[32], [8, 16], [16, 32]], ["float"] * 3)[1] == 2 * 8 * 16 * 32
    assert _work("aten::linear", [[2, 5, 16], [32, 16], [32]], ["float"] * 3)[1] == (
        2 * 10 * 16 * 32)
    assert _work("aten::matmul", [[3, 1, 8, 16], [5, 16, 4]], ["float"] * 2)[1] == (
        2 * 15 * 8 * 16 * 4)
    assert _work("aten::mm", [[8, 16], [15, 32]], ["float"] * 2) is None  # K mismatch


def test_conv_and_attention_formulas() -> None:
    conv = _work("aten::conv2d", [[2, 4, 9, 9], [8, 2, 3, 3], [8], [], [], [], []],
                 ["float"] * 3 + ["ScalarList"] * 3 + ["Scalar"],
                 ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "2"])
    assert conv is not None and conv[1] == 2 * 2 * 8 * 2 * 9 * 5 * 5  # out 5x5, Cin/g = 2
    bwd = _work("aten::convolution_backward",
                [[2, 8, 5, 5], [2, 4, 9, 9], [8, 2, 3, 3]] + [[]] * 8,
                ["float"] * 3 + ["ScalarList"] * 8,
                ["", "", "", "[8]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "2",
                 "[True, True, True]"])
    # grad_input = forward FLOPs; grad_weight counts full Cin (flop_counter's convention)
    assert bwd is not None and bwd[1] == conv[1] + 2 * 2 * 8 * 4 * 9 * 5 * 5
    old = _work("aten::cudnn_convolution_backward",
                [[2, 4, 9, 9], [2, 8, 5, 5], [8, 2, 3, 3]] + [[]] * 8,
                ["float"] * 3 + ["ScalarList"] * 3 + ["Int"] * 5)
    assert old is not None and old[1] == bwd[1]  # PyTorch <= 1.10: (input, grad_out, weight)
    q = [2, 4, 16, 8]
    full = _work("aten::_scaled_dot_product_flash_attention", [q, q, q, [], [], [], []],
                 ["c10::Half"] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "False", "False", ""])
    causal = _work("aten::_scaled_dot_product_flash_attention", [q, q, q, [], [], [], []],
                   ["c10::Half"] * 3 + ["Scalar"] * 4, ["", "", "", "0.", "True", "False", ""])
    assert full is not None and causal is not None
    assert full[1] == 4 * 2 * 4 * 16 * 16 * 8
    assert causal[1] == pytest.approx(full[1] * causal_fraction(16, 16))
    assert causal_fraction(16, 16) == pytest.approx(17 / 32)


def test_attention_matches_flop_counter() -> None:
    torch = pytest.importorskip("torch")
    from torch.utils import flop_counter as fc

    q, k = [2, 4, 16, 8], [2, 4, 24, 8]
    fwd = _work("aten::_scaled_dot_product_efficient_attention", [q, k, k] + [[]] * 5,
                ["c10::BFloat16"] * 3 + [""] * 5, [""] * 6 + ["False", ""])
    bwd = _work("aten::_scaled_dot_product_flash_attention_backward",
                [q, q, k, k] + [[]] * 11, ["c10::BFloat16"] * 4 + [""] * 11, [""] * 15)
    assert fwd is not None and bwd is not None
    assert fwd[1] == fc.sdpa_flop_count(torch.Size(q), torch.Size(k), torch.Size(k))
    assert bwd[1] == fc.sdpa_backward_flop_count(torch.Size(q), torch.Size(q), torch.Size(k),
                                                 torch.Size(k))


def test_per_element_families_and_no_model() -> None:
    add = _work("aten::add", [[4, 8], [8], []], ["float", "float", "Scalar"])
    assert add == ("elementwise", 32, (32 + 8 + 32) * 4)
    # out= argument recorded by older PyTorch: not read, written once
    assert _work("aten::clamp_min", [[4, 8], [], [4, 8]], ["float", "Int", "float"]) == (
        "elementwise", 32, 2 * 32 * 4)
    # an expanded (stride 0) input is read once per distinct element
    assert _work("aten::div", [[4, 8], []], ["float", "Scalar"],
                 strides=[[1, 0], []]) == ("elementwise", 32, (4 + 32) * 4)
    assert _work("aten::native_layer_norm", [[4, 8], [], [8], [8], []],
                 ["c10::BFloat16", "ScalarList", "c10::BFloat16", "c10::BFloat16", "Scalar"]
                 ) == ("norm", 5 * 32, (32 + 8 + 8 + 32) * 2)
    assert _work("aten::_softmax", [[4, 8], [], []], ["float", "Scalar", "Scalar"])[0] == (
        "softmax")
    assert _work("aten::embedding", [[100, 16], [3, 5]], ["float", "long int"]) == (
        "embedding", 0, 15 * 16 * 4 * 2 + 15 * 8)
    fused = _work("aten::_fused_adamw_", [[[10, 4], [6]]] * 4, ["TensorList"] * 4)
    assert fused == ("optimizer", 13 * 46, 4 * 46 * 7)
    assert _work("aten::view", [[4, 8], []], ["float", "ScalarList"])[1:] == (0, 0)
    assert _work("aten::my_custom_op", [[4, 8]], ["float"]) is None
    assert _work("vllm::unified_attention", [[4, 8]], ["float"]) is None


def _gpu_trace(tmp_path: Path, *, dims: list[list[int]], dtype: str = "c10::BFloat16",
               kernel: str = "sm90_xmma_gemm_bf16bf16_bf16f32", k_dur: float = 10.0,
               steps: int = 2) -> Path:
    b = TraceBuilder()
    for n in range(steps):
        t0 = n * 100.0
        b.annotation(f"ProfilerStep#{n + 1}", t0, 100)
        lin = b.op("aten::linear", t0 + 5, 40, input_dims=[dims[0], dims[1]],
                   input_types=[dtype, dtype])
        b.op("aten::t", t0 + 6, 1, input_dims=[dims[1]], input_types=[dtype])
        mm = b.op("aten::mm", t0 + 10, 30, input_dims=[dims[0], [dims[1][1], dims[1][0]]],
                  input_types=[dtype, dtype])
        b.launch(mm, "cudaLaunchKernel", t0 + 12, 3, kernel=kernel, k_ts=t0 + 20, k_dur=k_dur)
        assert lin
        mul = b.op("aten::mul", t0 + 50, 10, input_dims=[dims[0], dims[0]],
                   input_types=[dtype, dtype])
        b.launch(mul, "cudaLaunchKernel", t0 + 52, 3, kernel="elementwise_kernel",
                 k_ts=t0 + 60, k_dur=5)
    return b.write(tmp_path)


def test_attribution_roofline_and_mfu(tmp_path: Path) -> None:
    import stepscope

    trace = stepscope.load(str(_gpu_trace(tmp_path, dims=[[1024, 1024], [1024, 1024]])),
                           cache=False)
    eff = run_analyses(trace).efficiency
    assert eff is not None and eff.on_gpu
    (dev,) = eff.devices
    assert dev.match == "H100 SXM" and eff.mfu_dtype == "bf16"
    mm = next(r for r in eff.operators if r.name == "aten::mm")
    flops = 2 * 1024**3
    assert mm.calls == 2 and mm.flops == 2 * flops and mm.time_ns == 2 * 10_000
    assert mm.tflops_s == pytest.approx(flops / 10e-6 / 1e12)
    assert mm.pct_peak_flops == pytest.approx(100 * flops / 10e-6 / 989.5e12)
    assert mm.bound == "compute" and mm.pct_roofline == mm.pct_peak_flops
    mul = next(r for r in eff.operators if r.name == "aten::mul")
    assert mul.bound == "memory" and mul.pct_peak_bw == pytest.approx(
        100 * 3 * 1024**2 * 2 / 5e-6 / 3350e9)
    # the linear's work is counted once, on the mm it runs
    assert all(r.name != "aten::linear" for r in eff.operators)
    step = eff.steps[0]
    assert step.duration_ns == 100_000
    assert step.mfu_pct == pytest.approx(100 * (flops + 1024**2) / 100e-6 / 989.5e12)
    assert eff.mfu()[0] == pytest.approx(step.mfu_pct)
    shapes = eff.matmul_shapes
    assert shapes[0].m == shapes[0].n == shapes[0].k == 1024 and shapes[0].calls == 2
    assert eff.capped == 0 and eff.flops_capped == 0


def test_overrides_and_unknown_device(tmp_path: Path) -> None:
    import stepscope

    path = _gpu_trace(tmp_path, dims=[[64, 64], [64, 64]])
    raw = json.loads(__import__("gzip").decompress(path.read_bytes()))
    raw["deviceProperties"][0]["name"] = "Mystery GPU 9000"
    path.write_text(json.dumps(raw))
    trace = stepscope.load(str(path), cache=False)
    eff = run_analyses(trace).efficiency
    assert eff is not None and eff.devices[0].match is None
    assert (eff.devices[0].note or "").startswith("Mystery GPU 9000 is not in the peak table")
    assert eff.mfu() == (None, None)
    raw["deviceProperties"][0]["name"] = ""  # said as such, not "device '' is not in ..."
    path.write_text(json.dumps(raw))
    unnamed = run_analyses(stepscope.load(str(path), cache=False)).efficiency
    assert unnamed is not None and (unnamed.devices[0].note or "").startswith(
        "its deviceProperties name no model; pass --peak-tflops")
    eff = run_analyses(trace, peaks=Overrides(tflops=100.0, gbps=1000.0)).efficiency
    assert eff is not None and eff.devices[0].how == "override"
    assert eff.devices[0].tflops["bf16"] == 100.0 and eff.devices[0].gbps == 1000.0
    assert eff.mfu()[0] is not None


def test_cli_json_and_peak_flags(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _gpu_trace(tmp_path, dims=[[256, 256], [256, 256]])
    assert main(["report", str(path), "--format", "json", "--no-cache",
                 "--peak-tflops", "50", "--peak-gbps", "500"]) == 0
    data = json.loads(capsys.readouterr().out)["efficiency"]
    assert data["devices"][0]["peak_tflops"]["bf16"] == 50
    assert data["devices"][0]["peak_gbytes_per_s"] == 500
    assert data["mfu_pct"] is not None and data["operators"][0]["name"] == "aten::mm"
    assert main(["report", str(path), "--no-cache", "--peak-gbps", "0"]) == 2
    assert "--peak-gbps must be a positive number" in capsys.readouterr().err
    assert main(["report", str(path), "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert "Efficiency" in out and "MFU" in out


def test_no_shapes_no_efficiency(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.annotation("ProfilerStep#1", 0, 100)
    op = b.op("aten::mm", 10, 30)
    b.launch(op, "cudaLaunchKernel", 12, 3, kernel="gemm", k_ts=20, k_dur=10)
    trace = b.load(tmp_path)
    assert run_analyses(trace).efficiency is None


def test_recomputation_counts_in_hfu_not_mfu(tmp_path: Path) -> None:
    import stepscope

    bf16 = ["c10::BFloat16", "c10::BFloat16"]
    b = TraceBuilder()
    with b.step(1, 0, 1000):
        fwd = b.op("aten::mm", 10, 20, input_dims=[[64, 64], [64, 64]], input_types=bf16)
        b.launch(fwd, "cudaLaunchKernel", 12, 2, kernel="gemm_bf16", k_ts=100, k_dur=10)
        b.op("autograd::engine::evaluate_function: CheckpointFunctionBackward", 200, 300)
        b.op("CheckpointFunctionBackward", 210, 280)
        b.op("aten::linear", 220, 100, input_dims=[[64, 64], [64, 64]], input_types=bf16)
        again = b.op("aten::mm", 230, 20, input_dims=[[64, 64], [64, 64]], input_types=bf16)
        b.launch(again, "cudaLaunchKernel", 232, 2, kernel="gemm_bf16", k_ts=300, k_dur=10)
        grad = b.op("aten::mm", 400, 20, input_dims=[[64, 64], [64, 64]], input_types=bf16)
        b.launch(grad, "cudaLaunchKernel", 402, 2, kernel="gemm_bf16", k_ts=500, k_dur=10)
    trace = stepscope.load(str(b.write(tmp_path)), cache=False)
    eff = run_analyses(trace).efficiency
    assert eff is not None
    flops = 2 * 64**3
    (step,) = eff.steps
    assert step.hardware_flops == 3 * flops and step.model_flops == 2 * flops
    assert eff.recomputed_flops == flops
    mfu, hfu = eff.mfu()
    assert mfu is not None and hfu == pytest.approx(mfu * 1.5)


def test_malformed_records_never_raise() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from stepscope.analysis.efficiency.work import _BY_NAME

    ints = st.integers(min_value=-3, max_value=70)
    shape = st.lists(ints, max_size=5)
    arg = st.one_of(shape, st.lists(shape, max_size=3), st.just([]))
    names = st.sampled_from([*sorted(_BY_NAME), "aten::add", "aten::sum", "aten::_fused_adam_",
                             "aten::_foreach_mul_", "aten::cat", "aten::native_layer_norm"])
    texts = st.sampled_from(["", "0", "[2, 2]", "[0, 0]", "[-1]", "True", "False", "same",
                             "[True, False]", "x"])
    types = st.sampled_from(["float", "c10::BFloat16", "TensorList", "Scalar", "", "long int"])

    @settings(max_examples=300, deadline=None)
    @given(names, st.lists(arg, max_size=8), st.lists(types, max_size=8),
           st.lists(texts, max_size=12))
    def check(name: str, dims: list[object], ts: list[str], concrete: list[str]) -> None:
        w = model_op(decode(name, json.dumps(dims), json.dumps(ts), json.dumps(concrete)))
        assert w is None or (w.flops >= 0 and w.bytes >= 0)

    check()


def test_points_above_their_roof_say_why(tmp_path: Path) -> None:
    """A 1024³ bf16 matmul in 1 µs is 2,147 TFLOP/s: above the H100's 989.5 bf16 peak, so the
    peak is wrong (flagged with the factor); as FP32 on CUDA-core kernels (no Tensor Core name)
    it is above the FP32 peak: the dtype is; a 10 µs one sits below its roof: no flag."""
    import stepscope

    def rows(**kw: Any) -> dict[str, Any]:
        trace = stepscope.load(str(_gpu_trace(tmp_path, dims=[[1024, 1024], [1024, 1024]],
                                              **kw)), cache=False)
        eff = run_analyses(trace).efficiency
        assert eff is not None
        return {r.name: r for r in (*eff.operators, *eff.kernels)}

    fast = rows(k_dur=1.0)
    mm = fast["aten::mm"]
    assert mm.dtype == "bf16" and mm.tflops_s > 989.5
    assert mm.above_roof == f"peak: {2 * 1024**3 / 1e-6 / 989.5e12:.1f}x the bf16 peak of the " \
        "matched device; check the device's peak figures (matched part, clocks) or give " \
        "--peak-tflops"
    assert fast["sm90_xmma_gemm_bf16bf16_bf16f32"].above_roof == mm.above_roof
    assert fast["aten::mul"].above_roof is None  # memory-bound, its bytes capped at the roof
    fp32 = rows(k_dur=1.0, dtype="float", kernel="ampere_sgemm_128x64_nn")["aten::mm"]
    assert fp32.dtype == "fp32" and fp32.above_roof is not None
    assert fp32.above_roof.startswith(f"dtype: {2 * 1024**3 / 1e-6 / 67e12:.1f}x the FP32 peak")
    assert rows(k_dur=10.0)["aten::mm"].above_roof is None
