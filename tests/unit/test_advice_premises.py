"""Issue 21 items 2-4: matrix-core share and MFU dtype follow the kernels actually run, and
the rules that judge matmuls know the vendor, the matmul dtypes and whether the run is
compiled (``Context.premises``): each fires where its premise holds, silent where not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.builders import TraceBuilder

from stepscope.advice import Finding, advise
from stepscope.advice.context import Context
from stepscope.advice.rules.efficiency import low_mfu, tensor_cores
from stepscope.advice.rules.trace import elementwise, gpu_time_util, module_hotspot
from stepscope.analysis.suite import Analyses, run_analyses

BF16 = "c10::BFloat16"
FP32 = "float"
FP8 = "c10::Float8_e4m3fn"
TC_BF16 = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_cublas"
FFMA = ("sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x128x8_stage3_warpsize1x4x1_ffma"
        "_aligna4_alignc4_execute_kernel__5x_cublas")
TF32 = ("sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32_warpgroupsize1x1x1_execute"
        "_segment_k_off_kernel__5x_cublas")
GROUPED_FP8 = ("void cutlass::device_kernel<dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel>"
               "(dpsk::grouped_gemm::cuda::fp8_ptp128c::GemmKernel::Params)")
XDLOPS = ("igemm_fwd_gtcx3_nhwc_fp16_bx0_ex1_bt128x128x32_wt32x32x8_ws1x1_wr2x2_ta1x8x2x1"
          "_1x4x1x64_tb1x8x2x1_1x4x1x64_gkgs")
TRITON_MM = "triton_tem_fused_mm_0"
MFMA_BF16 = "Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1_AFC1"
MFMA_FP32 = "Cijk_Ailk_Bljk_S_B_Bias_HA_S_SAV_UserArgs_MT128x128x16_MI32x32x2x1_SN_LDSB1"
SIMT_AMD = "Cijk_Ailk_Bljk_BBS_BH_MT64x64x8_SN_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1"
TRANSPOSE = "void at::native::elementwise_kernel<128, 4, direct_copy_kernel_cuda transpose>"

MI300: dict[str, Any] = {"id": 0, "name": "AMD Instinct MI300X VF",
                         "totalGlobalMem": 205_822_885_888, "computeMajor": 9,
                         "computeMinor": 4, "maxThreadsPerBlock": 1024,
                         "maxThreadsPerMultiprocessor": 2048, "numSms": 304, "warpSize": 64}


def _trace(tmp_path: Path, kernel: str, *, dtype: str = BF16, amd: bool = False,
           device: int = 0, m: int = 4096, k: int = 4096, n: int = 4096,
           k_dur: float = 500, step_us: float = 1000, steps: int = 3,
           helper: str | None = None, compiled: bool = False, modules: bool = False,
           op: str = "aten::mm", props: dict[str, Any] | None = None,
           training: bool = False) -> Analyses:
    """Steps of one matmul each (``kernel`` for ``k_dur`` µs), optionally a helper kernel
    launched by the same operator, a compiled region, module ranges, and an optimizer step
    at each step's end (``training``)."""
    b = TraceBuilder()
    if amd:
        b.device_properties = [dict(MI300)]
    if props is not None:
        b.device_properties = [props]
    api = "hipLaunchKernel" if amd else "cudaLaunchKernel"
    for i in range(steps):
        t0 = i * step_us
        with b.step(i + 1, t0, step_us):
            if compiled:
                b.annotation("Torch-Compiled Region: 0/0", t0 + 0.5, step_us - 1)
            if modules:
                b._complete("python_function", "nn.Module: Net_0", 1, 1, t0 + 0.6,
                            step_us - 2, {})
                b._complete("python_function", "nn.Module: Mlp_0", 1, 1, t0 + 0.7,
                            step_us - 3, {})
            mm = b.op(op, t0 + 1, 5, input_dims=[[m, k], [k, n]], input_types=[dtype, dtype])
            b.launch(mm, api, t0 + 2, 2, kernel=kernel, k_ts=t0 + 10, k_dur=k_dur,
                     device=device)
            if helper is not None:
                b.launch(mm, api, t0 + 4, 1, kernel=helper, k_ts=t0 + 10 + k_dur,
                         k_dur=step_us - k_dur - 20, device=device)
            if training:
                b.annotation("Optimizer.step#SGD.step", t0 + step_us - 5, 2)
    return run_analyses(b.load(tmp_path))


def _get(a: Analyses, rule: str) -> Finding | None:
    return next((f for f in advise(a, replay=False) if f.id == rule), None)


# ---- matrix-core share and the MFU dtype ------------------------------------------------


@pytest.mark.parametrize(("kernel", "dtype", "amd", "tc_pct", "mfu_dtype"), [
    (FFMA, FP32, False, 0.0, "fp32"),  # xmma on CUDA cores: FP32, never TF32
    (TF32, FP32, False, 100.0, "tf32"),  # the kernel says tf32
    (GROUPED_FP8, FP8, False, 100.0, "fp8"),  # DeepSeek grouped FP8 GEMM
    (TRITON_MM, BF16, False, 100.0, "bf16"),  # Inductor matmul template (tl.dot)
    (XDLOPS, BF16, True, 100.0, "bf16"),  # MIOpen implicit GEMM on XDLOPS
    (MFMA_FP32, FP32, True, 100.0, "fp32"),  # AMD FP32 MFMA: the FP32 matrix peak, not TF32
])
def test_share_and_mfu_dtype_follow_the_kernels(tmp_path: Path, kernel: str, dtype: str,
                                                amd: bool, tc_pct: float,
                                                mfu_dtype: str) -> None:
    a = _trace(tmp_path, kernel, dtype=dtype, amd=amd)
    assert a.gpu[0].tensor_core_pct == pytest.approx(tc_pct)
    assert a.efficiency is not None
    assert a.efficiency.mfu_dtype == mfu_dtype


def test_fp32_on_cuda_cores_is_compute_bound_against_the_fp32_peak(tmp_path: Path) -> None:
    # 2*4096^3 FLOP in 4 ms: 34.4 TFLOP/s = 51 % of the H100 SXM's 67 FP32 TFLOP/s (it read
    # 7 % of the 494.5 TF32 peak, and "memory-bound", before)
    a = _trace(tmp_path, FFMA, dtype=FP32, k_dur=4000, step_us=5000)
    e = a.efficiency
    assert e is not None
    row = next(r for r in e.operators if r.name == "aten::mm")
    assert row.dtype == "fp32"
    assert row.pct_peak_flops == pytest.approx(100 * 2 * 4096**3 / 4e-3 / 67e12, rel=1e-3)
    assert row.bound == "compute"
    assert e.fp32_matmul_ns > 0


# ---- tensor-cores ------------------------------------------------------------------------


@pytest.mark.parametrize("training", [True, False])
def test_tensor_cores_fires_on_fp32_ffma_with_the_tf32_fix(tmp_path: Path,
                                                           training: bool) -> None:
    f = _get(_trace(tmp_path, FFMA, dtype=FP32, k_dur=900, training=training), "tensor-cores")
    assert f is not None
    assert "FP32 on CUDA cores" in f.title
    # inference: the same precision switches, without a backward pass in the snippet
    assert f.code == (tensor_cores.CODE_AMP_BF16 if training else tensor_cores.CODE_INFER_BF16)
    assert ("backward" in f.code) is training
    assert any("in fp32" in e and "compute capability 9.0" in e for e in f.evidence)
    assert any(e.startswith("kernel sm80_xmma_gemm_f32f32…ffma_") for e in f.evidence)


def test_tensor_cores_cites_gemms_never_their_helpers(tmp_path: Path) -> None:
    # a bf16 GEMM on Tensor Cores (100 µs) and a transpose/copy helper of the same aten::mm
    # (880 µs): the helper is no GEMM, so nothing runs off Tensor Cores
    a = _trace(tmp_path, TC_BF16, k_dur=100, helper=TRANSPOSE)
    assert _get(a, "tensor-cores") is None


def test_tensor_cores_on_amd_bf16_gives_the_rocm_fix(tmp_path: Path) -> None:
    # bf16 GEMMs in a non-MFMA Tensile kernel on MI300X; the device properties describe id 0
    # while the kernels run on device 2 (as ROCm writes it)
    f = _get(_trace(tmp_path, SIMT_AMD, amd=True, device=2, k_dur=900), "tensor-cores")
    assert f is not None
    assert "matrix cores" in f.title and "AMP" not in f.title and "TF32" not in f.title
    assert f.code == tensor_cores.CODE_ROCM_TUNE
    text = " ".join([f.title, f.fix, *f.evidence, f.code or ""])
    assert "compute capability" not in text and "allow_tf32" not in text
    assert "AMD Instinct MI300X VF (matrix cores (MFMA))" in text


@pytest.mark.parametrize("training", [True, False])
def test_tensor_cores_on_amd_fp32_asks_for_bf16_not_tf32(tmp_path: Path,
                                                        training: bool) -> None:
    f = _get(_trace(tmp_path, SIMT_AMD, dtype=FP32, amd=True, k_dur=900, training=training),
             "tensor-cores")
    assert f is not None
    assert f.code == (tensor_cores.CODE_ROCM_BF16 if training
                      else tensor_cores.CODE_INFER_ROCM_BF16)
    assert "tf32" not in (f.code or "").lower()


def test_tensor_cores_silent_on_amd_mfma(tmp_path: Path) -> None:
    a = _trace(tmp_path, MFMA_BF16, amd=True, device=2, k_dur=900)
    assert _get(a, "tensor-cores") is None


# ---- low-mfu -----------------------------------------------------------------------------


def test_low_mfu_on_bf16_asks_for_no_autocast(tmp_path: Path) -> None:
    f = _get(_trace(tmp_path, TC_BF16), "low-mfu")
    assert f is not None
    assert "autocast" not in f.fix and "TF32" not in f.fix
    assert f.code == low_mfu.CODE_COMPILE


def test_low_mfu_on_a_compiled_bf16_run_asks_for_neither(tmp_path: Path) -> None:
    f = _get(_trace(tmp_path, TC_BF16, compiled=True), "low-mfu")
    assert f is not None
    assert "autocast" not in f.fix and "fuse memory-bound chains" not in f.fix
    assert f.code == low_mfu.CODE_AUTOTUNE


def test_low_mfu_on_fp32_asks_for_autocast_and_tf32(tmp_path: Path) -> None:
    # 2*4096^3 FLOP per 10 ms step: 20 % of the 67 FP32 TFLOP/s
    f = _get(_trace(tmp_path, FFMA, dtype=FP32, k_dur=8000, step_us=10_000), "low-mfu")
    assert f is not None
    assert "autocast" in f.fix and "TF32" in f.fix
    assert f.code == low_mfu.CODE
    assert any("off Tensor Cores" in e for e in f.evidence)


V100 = {"id": 0, "name": "Tesla V100-SXM2-32GB", "totalGlobalMem": 34_079_899_648,
        "computeMajor": 7, "computeMinor": 0, "maxThreadsPerBlock": 1024,
        "maxThreadsPerMultiprocessor": 2048, "numSms": 80, "warpSize": 32}


@pytest.mark.parametrize("training", [True, False])
def test_low_mfu_on_volta_asks_for_fp16_not_tf32_or_bf16(tmp_path: Path,
                                                         training: bool) -> None:
    """Volta has Tensor Cores for fp16 only: no TF32, no bf16 (the real dlrm V100 ranks);
    loss scaling only where there are gradients (training)."""
    # 2*4096^3 FLOP per 100 ms step: 9 % of the V100's 15.7 FP32 TFLOP/s, in an 80 ms GEMM
    f = _get(_trace(tmp_path, "volta_sgemm_128x64_nn", dtype=FP32, k_dur=80_000,
                    step_us=100_000, props=V100, training=training), "low-mfu")
    assert f is not None
    assert ("run matmuls in FP16 with torch.autocast and a GradScaler" in f.fix) is training
    assert "run matmuls in FP16 with torch.autocast" in f.fix
    assert "(or TF32" not in f.fix and "BF16/FP16" not in f.fix
    assert f.code == (low_mfu.CODE_FP16 if training else low_mfu.CODE_FP16_INFER)
    assert "bfloat16" not in f.code and "float32_matmul_precision" not in f.code
    assert ("GradScaler" in f.code) is training


def test_low_mfu_on_amd_bf16_tunes_hipblaslt(tmp_path: Path) -> None:
    (tmp_path / "c").mkdir()
    f = _get(_trace(tmp_path, MFMA_BF16, amd=True, device=2), "low-mfu")
    assert f is not None
    assert "TunableOp" in f.fix and "autocast" not in f.fix
    assert f.code == low_mfu.CODE_ROCM_TUNE_COMPILE
    assert "set_float32_matmul_precision" not in (f.code or "")
    compiled = _get(_trace(tmp_path / "c", MFMA_BF16, amd=True, compiled=True), "low-mfu")
    assert compiled is not None and compiled.code == low_mfu.CODE_ROCM_TUNE


def test_low_mfu_silent_when_the_matmul_fills_the_step(tmp_path: Path) -> None:
    a = _trace(tmp_path, MFMA_BF16, amd=True, m=8192, k=8192, n=8192, k_dur=1400,
               step_us=1500)
    assert _get(a, "low-mfu") is None


# ---- matmul-alignment ----------------------------------------------------------------------


def test_matmul_alignment_fires_on_amd_mfma_in_its_words(tmp_path: Path) -> None:
    f = _get(_trace(tmp_path, MFMA_BF16, amd=True, k=4100, n=50257, k_dur=5000,
                    step_us=6000), "matmul-alignment")
    assert f is not None
    assert "MFMA" in f.evidence[0] and "Tensor Core" not in f.evidence[0]
    assert "hipBLASLt" in f.estimate


def test_matmul_alignment_silent_when_the_gemm_runs_on_cuda_cores(tmp_path: Path) -> None:
    # the same odd shape in float32 on CUDA cores: no Tensor Core tile to fit
    a = _trace(tmp_path, FFMA, dtype=FP32, k=4100, n=50257, k_dur=5000, step_us=6000)
    assert _get(a, "matmul-alignment") is None


# ---- dominant-module ---------------------------------------------------------------------


def test_dominant_module_fix_fits_an_eager_fp32_run(tmp_path: Path) -> None:
    f = _get(_trace(tmp_path, FFMA, dtype=FP32, modules=True, k_dur=900), "dominant-module")
    assert f is not None
    assert "torch.compile" in f.fix and "autocast" in f.fix
    assert f.code == module_hotspot.CODE


def test_dominant_module_fix_fits_a_compiled_bf16_run(tmp_path: Path) -> None:
    f = _get(_trace(tmp_path, TC_BF16, modules=True, compiled=True, k_dur=900),
             "dominant-module")
    assert f is not None
    assert "autocast" not in f.fix and "compile it" not in f.fix
    assert "graph breaks" in f.fix
    assert f.code is None


def test_premises_read_from_the_trace(tmp_path: Path) -> None:
    p = Context(_trace(tmp_path, MFMA_BF16, amd=True, device=2, compiled=True)).premises
    assert (p.vendor, p.matrix_cores, p.low_precision) == ("amd", True, True)
    assert p.device is not None and p.device.name == "AMD Instinct MI300X VF"
    assert p.compiled == "Torch-Compiled Region: 0/0"
    assert p.matmul_dtypes == {"bf16": 1.0}
    assert p.graph_launches == 0


# ---- rules whose fix names torch.compile / AMP / graphs --------------------------------


def _busy(tmp_path: Path, op: str, kernel: str, *, compiled: bool = False) -> list[Finding]:
    """One 10 ms step, the GPU busy with ``kernel`` launched by ``op``."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        if compiled:
            b.annotation("Torch-Compiled Region: 0/0", 1, 9_990)
        for i in range(100):
            o = b.op(op, 10 + i * 50, 40)
            b.launch(o, "cudaLaunchKernel", 12 + i * 50, 5, kernel=kernel, k_ts=100 + i * 99,
                     k_dur=99)
    return advise(run_analyses(b.load(tmp_path)), replay=False)


EAGER_MUL = "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>"


def test_elementwise_in_an_eager_run_suggests_compile(tmp_path: Path) -> None:
    f = next(f for f in _busy(tmp_path, "aten::mul", EAGER_MUL) if f.id == "elementwise-dominated")
    assert f.code == elementwise.CODE


def test_elementwise_in_a_compiled_run_points_at_graph_breaks(tmp_path: Path) -> None:
    fs = _busy(tmp_path, "aten::mul", EAGER_MUL, compiled=True)
    f = next(f for f in fs if f.id == "elementwise-dominated")
    assert f.code == elementwise.CODE_COMPILED
    assert "graph breaks" in f.fix and "Torch-Compiled Region" in f.fix


def test_elementwise_silent_when_inductor_fused_them(tmp_path: Path) -> None:
    fs = _busy(tmp_path, "aten::mul", "triton_poi_fused_add_mul_0", compiled=True)
    assert "elementwise-dominated" not in [f.id for f in fs]


def test_copies_in_a_compiled_run_drop_the_compile_line(tmp_path: Path) -> None:
    copy = "void at::native::unrolled_elementwise_kernel<copy>"
    eager = next(f for f in _busy(tmp_path, "aten::copy_", copy)
                 if f.id == "materialising-copies")
    assert "torch.compile" in (eager.code or "")
    comp = next(f for f in _busy(tmp_path, "aten::copy_", copy, compiled=True)
                if f.id == "materialising-copies")
    assert "torch.compile" not in (comp.code or "") and "torch.compile" not in comp.fix


def test_premise_helpers_of_the_batching_fixes(tmp_path: Path) -> None:
    # gpu-low-utilization and small-batch read the same premises
    a = _trace(tmp_path, TC_BF16, compiled=True)
    ctx = Context(a)
    assert "torch.compile" not in gpu_time_util._fix(ctx)
    assert "CUDA graphs" in gpu_time_util._fix(ctx)
    (tmp_path / "amd").mkdir()
    a2 = _trace(tmp_path / "amd", MFMA_BF16, amd=True)
    assert "HIP graphs" in gpu_time_util._fix(Context(a2))


def test_small_batch_offers_amp_only_to_a_run_without_it(tmp_path: Path) -> None:
    (tmp_path / "fp32").mkdir()
    bf16 = _get(_trace(tmp_path, TC_BF16, k_dur=200, training=True), "small-batch")
    fp32 = _get(_trace(tmp_path / "fp32", TF32, dtype=FP32, k_dur=200, training=True),
                "small-batch")
    assert bf16 is not None and fp32 is not None
    assert "AMP" not in bf16.fix and "activation checkpointing" in bf16.fix
    assert "AMP or activation checkpointing" in fp32.fix


def test_small_batch_fix_follows_the_run_it_reads(tmp_path: Path) -> None:
    """Training scales its learning rate with the batch; a run without a backward pass or
    an optimizer step is inference and hears nothing of learning rates or optimizers."""
    (tmp_path / "train").mkdir()
    train = _get(_trace(tmp_path / "train", TC_BF16, k_dur=200, training=True), "small-batch")
    infer = _get(_trace(tmp_path, TC_BF16, k_dur=200), "small-batch")
    assert train is not None and infer is not None
    assert "learning rate" in train.fix and "param_groups" in (train.code or "")
    assert "the run trains" in train.evidence[-1]
    for text in (infer.fix, infer.code or ""):
        assert "learning rate" not in text and "optimizer" not in text and "lr" not in text
    assert "more inputs" in infer.fix and "inference_mode" in (infer.code or "")
    assert infer.evidence[-1] == "no backward pass or optimizer step in the trace: inference"
    (tmp_path / "vllm").mkdir()
    served = _get(_trace(tmp_path / "vllm", TC_BF16, k_dur=200,
                         op="vllm::unified_attention_with_output"), "small-batch")
    assert served is not None and "max_num_seqs" in served.fix and served.code is None
    # no PyTorch operator recorded (CUDA calls and ranges only, as in an nsys export or a
    # Triton benchmark): whether the run trains is unknown, and the fix says both
    (tmp_path / "unknown").mkdir()
    unknown = _get(_trace(tmp_path / "unknown", TC_BF16, k_dur=200, op="my_kernel_wrapper"),
                   "small-batch")
    assert unknown is not None and unknown.code is None
    assert "in training, scale the learning rate" in unknown.fix
    assert "in inference, batch more inputs" in unknown.fix
    assert unknown.evidence[-1] == ("the trace records no PyTorch operators: whether the run "
                                    "trains is not known")


def test_a_loss_without_a_backward_pass_is_not_known_to_be_inference(tmp_path: Path) -> None:
    """A window that computes a loss but holds no backward pass is an evaluation loop, or a
    training step cut before its backward: neither fix may be given as the only one."""
    b = TraceBuilder()
    for i in range(3):
        t0 = i * 1000.0
        with b.step(i + 1, t0, 1000):
            mm = b.op("aten::mm", t0 + 1, 5, input_dims=[[4096, 4096], [4096, 4096]],
                      input_types=[BF16, BF16])
            b.launch(mm, "cudaLaunchKernel", t0 + 2, 2, kernel=TC_BF16, k_ts=t0 + 10,
                     k_dur=200)
            b.op("aten::mse_loss", t0 + 300, 5)
    a = run_analyses(b.load(tmp_path))
    p = Context(a).premises
    assert not p.training and not p.inference and p.loss == "aten::mse_loss"
    f = _get(a, "small-batch")
    assert f is not None and f.code is None
    assert "in training, scale the learning rate" in f.fix
    assert "in inference, batch more inputs" in f.fix
    assert f.evidence[-1] == ("a loss is computed (aten::mse_loss) but the trace holds no "
                              "backward pass: an evaluation, or a window that ends before "
                              "the backward; whether the run trains is not known")


# ---- the audit on real traces: a copy to pageable memory waits like a sync -------------

def _copy_after_gemm(b: TraceBuilder, name: str, *, call_end: float, copy_ts: float) -> None:
    """A 10 ms step: a 4 ms GEMM queued at once, then one cudaMemcpyAsync on pageable memory
    whose call runs until ``call_end`` and whose copy runs at ``copy_ts`` for 5 µs."""
    with b.step(1, 0, 10_000):
        mm = b.op("aten::mm", 10, 20)
        b.launch(mm, "cudaLaunchKernel", 12, 5, kernel=TC_BF16, k_ts=100, k_dur=4000)
        cp = b.op("aten::copy_", 40, call_end - 30)
        b.launch(cp, "cudaMemcpyAsync", 50, call_end - 50, kernel=name, k_ts=copy_ts, k_dur=5,
                 cat="gpu_memcpy", bytes=4)


def test_dtoh_pageable_copy_waiting_for_queued_work_is_a_sync(tmp_path: Path) -> None:
    # .item()/.cpu(): cudaMemcpyAsync to pageable memory returns only once the copy is done,
    # so its 4 ms are a wait for the GEMM queued before it, which pinning would not remove
    b = TraceBuilder()
    _copy_after_gemm(b, "Memcpy DtoH (Device -> Pageable)", call_end=4150, copy_ts=4110)
    fs = {f.id: f for f in advise(run_analyses(b.load(tmp_path)), replay=False)}
    assert "async-memcpy-pageable" not in fs
    sync = fs["host-sync"]
    assert sync.saving_us == pytest.approx(4100, abs=5)
    assert any("copies to pageable host memory" in e for e in sync.evidence)


def test_htod_pageable_copy_staging_is_not_a_sync(tmp_path: Path) -> None:
    # an HtoD copy from pageable memory is staged by the CPU (no device synchronisation):
    # its blocked time is the pageable cost, not a wait for the GPU
    b = TraceBuilder()
    _copy_after_gemm(b, "Memcpy HtoD (Pageable -> Device)", call_end=3050, copy_ts=4110)
    fs = {f.id: f for f in advise(run_analyses(b.load(tmp_path)), replay=False)}
    assert "host-sync" not in fs
    assert fs["async-memcpy-pageable"].saving_us == pytest.approx(3000, abs=5)


# ---- launch-bound speaks the run's vendor and knows a compiled run ----------------------

def _launch_bound(tmp_path: Path, *, amd: bool = False, compiled: bool = False,
                  op: str = "aten::add") -> Finding:
    b = TraceBuilder()
    if amd:
        b.device_properties = [dict(MI300)]
    api = "hipLaunchKernel" if amd else "cudaLaunchKernel"
    with b.step(1, 0, 10_000):
        if compiled:
            b.annotation("Torch-Compiled Region: 0/0", 1, 9_998)
        for i in range(1000):
            t = 5 + i * 10
            o = b.op(op, t, 8)
            b.launch(o, api, t + 1, 6, kernel="void kernel_small", k_ts=t + 8, k_dur=2)
    fs = advise(run_analyses(b.load(tmp_path)), replay=False)
    (f,) = [f for f in fs if f.id == "launch-bound"]
    return f


def test_launch_bound_on_amd_says_hip_graphs(tmp_path: Path) -> None:
    f = _launch_bound(tmp_path, amd=True)
    assert "HIP graphs" in f.fix and "CUDA" not in f.fix
    assert f.code is not None and "captures HIP graphs" in f.code


def test_launch_bound_on_nvidia_says_cuda_graphs(tmp_path: Path) -> None:
    f = _launch_bound(tmp_path)
    assert "CUDA graphs" in f.fix and "HIP" not in f.fix
    assert 'torch.compile(mode="reduce-overhead")' in f.fix


def test_launch_bound_on_a_compiled_run_does_not_ask_for_torch_compile(tmp_path: Path) -> None:
    f = _launch_bound(tmp_path, compiled=True)
    assert "already compiled (Torch-Compiled Region: 0/0)" in f.fix
    assert 'torch.compile(mode="reduce-overhead")' not in f.fix


def test_launch_bound_in_vllm_names_vllms_switches_not_torch_compile(tmp_path: Path) -> None:
    """A model served by vLLM (its custom operators, vllm::NAME) is compiled and graphed by
    vLLM itself: the fix names --enforce-eager and cudagraph_mode, no torch.compile snippet."""
    f = _launch_bound(tmp_path, op="vllm::unified_attention_with_output")
    assert "serves with vLLM (vllm::unified_attention_with_output)" in f.fix
    assert "--enforce-eager" in f.fix and "cudagraph_mode=NONE" in f.fix
    assert "torch.compile" not in f.fix and f.code is None
    assert all("vllm.ai" in r for r in f.references)
    (tmp_path / "amd").mkdir()
    amd = _launch_bound(tmp_path / "amd", amd=True, op="vllm::moe_forward")
    assert "HIP graphs" in amd.fix and "CUDA" not in amd.fix


def test_launch_bound_snippet_captures_what_the_run_does(tmp_path: Path) -> None:
    """Inference (aten operators, no backward, no optimizer) captures its forward pass;
    a run the trace cannot tell (no aten operator) keeps the training-step snippet."""
    f = _launch_bound(tmp_path)  # aten::add: inference
    assert f.code is not None and "static_out = model(static_x)" in f.code
    assert "train_step" not in f.code and "loss" not in f.code
    (tmp_path / "unknown").mkdir()
    g = _launch_bound(tmp_path / "unknown", op="my_op")
    assert g.code is not None and "train_step(static_x, static_y)" in g.code


def test_premises_know_vllm_by_its_operator_namespace() -> None:
    from stepscope.classify.names import is_vllm_op
    assert is_vllm_op("vllm::moe_forward") and is_vllm_op("vllm::all_reduce")
    assert not is_vllm_op("aten::mm") and not is_vllm_op("_C::rms_norm")
    assert not is_vllm_op("vllm_custom_range")  # a range named like it, not the namespace


# ---- low-occupancy: a library GEMM's occupancy is its tile choice -----------------------

def _low_occupancy_gemm(tmp_path: Path, blocks_per_sm: float) -> list[str]:
    """Steps of FP32 cuBLAS GEMMs at 6 % achieved occupancy (244 registers/thread)."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        for i in range(100):
            o = b.op("aten::mm", 10 + i * 50, 40)
            b.launch(o, "cudaLaunchKernel", 12 + i * 50, 5, kernel=FFMA, k_ts=100 + i * 99,
                     k_dur=99, **{"est. achieved occupancy %": 6.0,
                                  "blocks per SM": blocks_per_sm, "registers per thread": 244})
    return [f.id for f in advise(run_analyses(b.load(tmp_path)), replay=False)]


def test_low_occupancy_ignores_a_gemm_whose_grid_fills_the_gpu(tmp_path: Path) -> None:
    # kernelforge-gh200: cuBLAS FP32 GEMMs at 6-12 % occupancy reach 58 % of the FP32 peak
    assert "low-occupancy" not in _low_occupancy_gemm(tmp_path, 0.97)


def test_low_occupancy_reports_a_gemm_that_leaves_most_sms_idle(tmp_path: Path) -> None:
    # param-dlrm: volta_sgemm_128x32_nt on a grid of 8 blocks for 80 SMs
    assert "low-occupancy" in _low_occupancy_gemm(tmp_path, 0.1)


# ---- gpu-gaps: a first call far slower than the later ones is warm-up --------------------

def _gap_in_conv(tmp_path: Path, first_ms: float, *, dims: list[list[int]] | None = None,
                 later_dims: list[list[int]] | None = None) -> list[str]:
    """Three 60 ms steps; each runs a tiny kernel, then one convolution whose kernel starts
    when the call ends.
    The first call takes ``first_ms`` with the GPU idle, later ones 1 ms; the GPU is busy the
    rest of each step."""
    b = TraceBuilder()
    for i in range(3):
        t0 = i * 60_000.0
        with b.step(i + 1, t0, 60_000):
            add = b.op("aten::add", t0 + 1, 4)
            b.launch(add, "cudaLaunchKernel", t0 + 2, 2, kernel="void add_kernel", k_ts=t0 + 5,
                     k_dur=2)
            dur = first_ms * 1000 if i == 0 else 1000.0
            conv = b.op("aten::cudnn_convolution", t0 + 10, dur,
                        input_dims=dims if i == 0 else (later_dims or dims),
                        input_types=[FP32, FP32])
            b.launch(conv, "cudaLaunchKernel", t0 + 10 + dur - 10, 5,
                     kernel="void implicit_convolve_sgemm<float, float, 1024>",
                     k_ts=t0 + 10 + dur, k_dur=60_000 - dur - 20)
    return [f.id for f in advise(run_analyses(b.load(tmp_path)), replay=False)]


def test_gpu_gaps_leaves_a_slow_first_call_to_warm_up(tmp_path: Path) -> None:
    # py4ai-rtx3090: the first aten::cudnn_convolution takes 146.6 ms, later ones 0.05-18 ms
    assert "gpu-gaps" not in _gap_in_conv(tmp_path, 40, dims=[[8, 3, 224, 224], [64, 3, 7, 7]])


def test_gpu_gaps_counts_a_slow_call_of_a_shape_seen_once(tmp_path: Path) -> None:
    # a shape called once gives nothing to compare with: steady-state host work for all we know
    assert "gpu-gaps" in _gap_in_conv(tmp_path, 40, dims=[[8, 3, 224, 224], [64, 3, 7, 7]],
                                      later_dims=[[8, 64, 56, 56], [64, 64, 3, 3]])


def test_no_cuda_graphs_advice_on_an_mtia_device(tmp_path: Path) -> None:
    # hta/mtia_trace_single_rank: gpu-low-utilization said "CUDA graphs" on an MTIA device
    b = TraceBuilder()
    for i in range(3):
        t0 = i * 1000.0
        with b.step(i + 1, t0, 1000):
            mm = b.op("aten::mm", t0 + 1, 5)
            rt = b.runtime("runFunction - job_prep_and_submit_for_execution", t0 + 2, 2,
                           owner=mm, cat="mtia_runtime")
            b.device_op(rt, "mtia_kernel", t0 + 10, 100)
    ctx = Context(run_analyses(b.load(tmp_path)))
    assert ctx.premises.vendor == "mtia" and not ctx.premises.graph_api
    fix = gpu_time_util._fix(ctx)
    assert "torch.compile" in fix and "graphs" not in fix


# ---- unfused-optimizer: the fix names what the optimizer class and the device have -------

def _unfused(tmp_path: Path, cls: str, *, mtia: bool = False) -> Finding:
    b = TraceBuilder()
    rt_cat = "mtia_runtime" if mtia else "cuda_runtime"
    api = "runFunction - job_prep_and_submit_for_execution" if mtia else "cudaLaunchKernel"
    with b.step(1, 0, 10_000):
        mm = b.op("aten::mm", 0, 10)
        rt = b.runtime(api, 1, 5, owner=mm, cat=rt_cat)
        b.device_op(rt, TC_BF16, 10, 7000)
        b.annotation(f"Optimizer.step#{cls}.step", 7100, 2800)
        for i in range(100):
            t = 7110 + i * 25
            o = b.op("aten::addcmul_", t, 20)
            rt = b.runtime(api, t + 1, 5, owner=o, cat=rt_cat)
            b.device_op(rt, "void at::native::addcmul_kernel", t + 8, 2)
    fs = advise(run_analyses(b.load(tmp_path)), replay=False)
    (f,) = [f for f in fs if f.id == "unfused-optimizer"]
    return f


def test_unfused_adagrad_gets_foreach_not_fused(tmp_path: Path) -> None:
    # param-dlrm-8rank: Optimizer.step#Adagrad.step was told fused=True with an AdamW snippet
    f = _unfused(tmp_path, "Adagrad")
    assert "torch.optim.Adagrad(..., foreach=True)" in f.fix and "fused=True" not in f.fix
    assert f.code == "optimizer = torch.optim.Adagrad(model.parameters(), lr=lr, foreach=True)"


def test_unfused_sgd_gets_fused(tmp_path: Path) -> None:
    f = _unfused(tmp_path, "SGD")
    assert "torch.optim.SGD(..., fused=True)" in f.fix
    assert f.code is not None and "SGD(" in f.code and "fused=True" in f.code


def test_unfused_optimizer_on_mtia_does_not_promise_cuda_kernels(tmp_path: Path) -> None:
    f = _unfused(tmp_path, "Adam", mtia=True)
    assert "fused=True" not in f.fix and "torch.compile" in f.fix


def test_launch_bound_caps_by_launch_overhead_not_a_first_launch_stall(tmp_path: Path) -> None:
    # hta/amd_trace mi250: one hipLaunchKernel of 6.54 ms (first launch) made "6.64 ms of CPU
    # time in launch calls" and a HIGH saving; the other 13 calls take 3.7-12.7 µs
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        b.small_launches(100, 50)
        o = b.op("aten::add", 5100, 3010)
        b.launch(o, "cudaLaunchKernel", 5101, 3000, kernel="void kernel_small", k_ts=8102,
                 k_dur=2)
    fs = advise(run_analyses(b.load(tmp_path)), replay=False)
    (f,) = [f for f in fs if f.id == "launch-bound"]
    assert f.saving_us == pytest.approx(600, abs=1)  # 100 calls × 6 µs, not 3.6 ms
    assert any("101 kernel launches per step, 600.0 µs of CPU time" in e
               and "not counting 3.00 ms" in e for e in f.evidence)


def test_low_mfu_in_vllm_names_vllms_batching_not_torch_compile() -> None:
    from stepscope.advice.context import Premises
    from stepscope.advice.rules.efficiency.low_mfu import _fix
    p = Premises(vendor="amd", device=None, matrix_cores=True, matmul_dtypes={"bf16": 1.0},
                 fp32_off_matrix_ns=0.0, compiled="TorchDynamo Cache Lookup", graph_launches=0,
                 vllm="vllm::moe_forward")
    fix, code = _fix(p)
    assert "serves with vLLM, vllm::moe_forward" in fix and "--max-num-batched-tokens" in fix
    assert "PYTORCH_TUNABLEOP_ENABLED=1" in fix and "torch.compile" not in fix and code is None
    assert "--dtype" not in fix and "--enforce-eager" not in fix  # bf16 and compiled already


@pytest.mark.parametrize("training", [True, False])
def test_tensor_cores_on_volta_asks_for_loss_scaling_only_in_training(tmp_path: Path,
                                                                      training: bool) -> None:
    """fp16 on Volta needs a GradScaler only where there are gradients: inference is told
    to run in float16 without one, and its snippet has no backward pass."""
    f = _get(_trace(tmp_path, "volta_sgemm_128x64_nn", dtype=FP32, k_dur=900, props=V100,
                    training=training), "tensor-cores")
    assert f is not None
    assert ("GradScaler" in f.fix) is training and ("GradScaler" in (f.code or "")) is training
    assert f.code == (tensor_cores.CODE_AMP_FP16 if training else tensor_cores.CODE_INFER_FP16)
    assert f.title.endswith("enable AMP" if training else "run them in float16")


# ---- an Intel XPU trace is not NVIDIA's -------------------------------------------------

def test_an_xpu_trace_gets_no_cuda_advice(tmp_path: Path) -> None:
    """XPUPTI writes ``xpu_runtime`` calls (``urEnqueueKernelLaunch``): the vendor is Intel,
    so no fix names CUDA graphs, TF32 or a compute capability, and the launch-bound snippet
    is fusion (PyTorch exposes no graph API for XPU)."""
    b = TraceBuilder()
    b.device_properties = [{"id": 0, "name": "Intel(R) Data Center GPU Max 1550",
                            "totalGlobalMem": 68_719_476_736}]
    with b.step(1, 0, 10_000):
        for i in range(1000):
            t = 5 + i * 10
            o = b.op("aten::add", t, 8)
            rt = b.runtime("urEnqueueKernelLaunch", t + 1, 6, owner=o, cat="xpu_runtime")
            b.device_op(rt, "elementwise_kernel", t + 8, 2)
    trace = b.load(tmp_path)
    assert trace.meta.vendor == "intel"
    fs = {f.id: f for f in advise(run_analyses(trace), replay=False)}
    f = fs["launch-bound"]
    assert "graph" not in f.fix.lower() and "torch.compile" in f.fix
    assert f.code == "model = torch.compile(model)   # fewer, fused kernels"
    for g in fs.values():
        text = " ".join((g.title, g.fix, g.code or "", g.estimate, *g.evidence, *g.references))
        assert "cuda" not in text.lower() and "TF32" not in text
        assert "compute capability" not in text
