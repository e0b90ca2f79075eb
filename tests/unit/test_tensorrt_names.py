"""The name decoder: table-driven over real engine names and documented examples."""

from __future__ import annotations

import glob
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.conftest import shared_trace

from stepscope.analysis.tensorrt.names import decode, decode_kernel, decode_layer, myelin_ops

CASES = [  # (name, kind, ops prefix, precision, tensor cores, idioms)
    (
        "__myl_bb0_8_ResTraCasAddMeaSubMulMeaAddSqrDivMulMulAddRes_com_vec",
        "myelin",
        ("Reshape", "Transpose", "Cast", "Add", "ReduceMean"),
        None,
        None,
        ("LayerNorm",),
    ),
    (
        "__myl_TraMaxSubExpSum_0xcbcb71f1d2e3",
        "myelin",
        ("Transpose", "Max", "Sub", "Exp", "ReduceSum"),
        None,
        None,
        ("Softmax",),
    ),
    (
        "__myl_MeanSubMulMeanAddSqrtDiv_myl0_3",
        "myelin",
        ("ReduceMean", "Sub"),
        None,
        None,
        ("LayerNorm",),
    ),
    (
        "__myl_MulMinMaxRounCast_myl2_1",
        "myelin",
        ("Mul", "Min", "Max", "Round", "Cast"),
        None,
        None,
        ("QuantizeLinear",),
    ),
    (
        "__myl_FcNegExpAddDivMulMul_myl1_2",
        "myelin",
        ("Gemm (fused epilogue)", "Neg"),
        None,
        None,
        ("Sigmoid/SiLU",),
    ),
    ("__myl_MulMulMulEtc_myl4_6", "myelin", ("Mul", "Mul", "Mul", "… (truncated)"), None, None, ()),
    (
        "sm80_xmma_fprop_implicit_gemm_f32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4_warpsize2x2x1_g1_tensor16x8x8",
        "xmma",
        ("conv forward",),
        "TF32",
        True,
        (),
    ),
    (
        "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nhwckrsc_nhwc_tilesize128x64x8_stage3_warpsize2x2x1_g1_ffma_t1r3s3_aligna4_alignc4",
        "xmma",
        ("conv forward",),
        "FP32",
        False,
        (),
    ),
    (
        "sm75_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_tilesize32x32x64_stage1_warpsize2x1x1_g1_tensor8x8x16_t1r1s1",
        "xmma",
        ("conv forward",),
        "INT8",
        True,
        (),
    ),
    (
        "ampere_h16816cudnn_128x128_ldg8_relu_exp_stages_64x3_large_nhwc_tn_v1",
        "cudnn",
        ("convolution",),
        "FP16",
        True,
        (),
    ),
    (
        "volta_int8x4_icudnn_int8x4_128x32_relu_xregs_medium_c32_nn_v1",
        "cudnn",
        ("convolution",),
        "INT8",
        False,
        (),
    ),
    (
        "ampere_scudnn_winograd_128x128_ldg1_ldg4_relu_tile148t_nt_v1",
        "cudnn",
        ("convolution",),
        "FP32",
        False,
        (),
    ),
    (
        "trt_turing_cutlass_image_network_first_layer_hmma_fprop_f16f16f32_nhwc_nhwc_k64r7s7c4_stride2x2",
        "cutlass",
        ("conv forward",),
        "FP16",
        True,
        (),
    ),
    ("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTT", "cublas-jit", ("GEMM",), "FP16", True, ()),
    (
        "void genericReformat::copyPackedKernel<float, int>(unsigned int)",
        "reformat",
        ("Reformat",),
        None,
        None,
        (),
    ),
    ("generatedNativePointwise", "pointwise", ("Pointwise",), None, None, ()),
    (
        "fmha_v2_flash_attention_fp16_64_128_S_80_sm86_kernel",
        "attention",
        ("Attention",),
        "FP16",
        True,
        (),
    ),
]
LAYER_CASES = [  # (name, kind, ops)
    (
        "{ForeignNode[/head/Constant_2_output_0.../Unsqueeze_2]}",
        "myelin-region",
        ("Constant_2_output", "…", "Unsqueeze"),
    ),
    ("$$myelin$$/time_embedding/act/sigmoid", "myelin-tag", ("sigmoid",)),
    ("/mlp/linear_fc1_14/Gemm_myl5_155", "myelin", ("Gemm",)),
    ("_gemm_mha_v2_myl3_4", "attention", ("Attention",)),
    (
        "features.0.0.weight + QuantizeLinear_8 + Conv_12 + PWN(Clip_16)",
        "fused-layer",
        ("QuantizeLinear", "Conv", "Clip"),
    ),
    (
        "PWN(PWN((Unnamed Layer* 109) [Constant] + (Unnamed Layer* 110) [ElementWise], "
        "(Unnamed Layer* 111) [Unary]), Relu_3)",
        "pointwise",
        ("Constant", "ElementWise", "Unary", "Relu"),
    ),
    ("Reformatting CopyNode for Input Tensor 0 to Conv_0 + Relu_1", "reformat", ("Reformat",)),
    ("(Unnamed Layer* 132) [Shuffle]", "unnamed-layer", ("Shuffle",)),
    ("[trainStation1]", "shape-sync", ("ShapeSync",)),
    ("(Unnamed Layer* 718) [NMS]_1_output[DevicetoShapeHostCopy]", "shape-sync", ("ShapeSync",)),
    ("Conv_3 + Relu_4 [profile 1]", "fused-layer", ("Conv", "Relu")),
    ("/backbone/maxpool/MaxPool", "plain", ("MaxPool",)),
]


@pytest.mark.parametrize(("name", "kind", "ops", "prec", "tc", "idioms"), CASES)
def test_kernel_table(
    name: str,
    kind: str,
    ops: tuple[str, ...],
    prec: str | None,
    tc: bool | None,
    idioms: tuple[str, ...],
) -> None:
    d = decode_kernel(name)
    assert d.kind == kind
    assert d.ops[: len(ops)] == ops
    assert d.precision == prec and d.tensor_cores == tc
    assert d.idioms == idioms
    assert d.summary and d.to_json()["summary"] == d.summary


@pytest.mark.parametrize(("name", "kind", "ops"), LAYER_CASES)
def test_layer_table(name: str, kind: str, ops: tuple[str, ...]) -> None:
    d = decode_layer(name)
    assert d.kind == kind and d.ops == ops


def test_fields() -> None:
    d = dict(decode_kernel(CASES[6][0]).fields)
    assert d["arch"] == "sm80" and d["CTA tile"] == "128x128x16" and d["stages"] == "4"
    assert d["warps"] == "2x2x1" and d["MMA shape"] == "16x8x8"
    assert dict(decode_layer("Conv_3 + Relu_4 [profile 1]").fields)["optimisation profile"] == "1"
    assert dict(decode_kernel(CASES[0][0]).fields)["basic block"] == "0.8"
    assert myelin_ops("ReshTranCastSigmSilu") == ("Reshape", "Transpose", "Cast", "Sigmoid", "SiLU")


def test_every_real_name_decodes() -> None:
    """Every layer and tactic name in ../shared/traces/tensorrt decodes to a known shape."""
    root = shared_trace("tensorrt")
    layers: set[str] = set()
    tactics: set[str] = set()
    for f in glob.glob(str(root / "**" / "*.json"), recursive=True):
        doc = json.loads(Path(f).read_text())
        if isinstance(doc, dict) and isinstance(doc.get("Layers"), list):
            for lay in doc["Layers"]:
                if isinstance(lay, str):
                    layers.add(lay)
                else:
                    layers.add(lay["Name"])
                    if lay.get("TacticName"):
                        tactics.add(lay["TacticName"])
        elif isinstance(doc, list) and doc and isinstance(doc[0], dict) and "count" in doc[0]:
            layers.update(x["name"] for x in doc[1:])
    assert len(layers) > 400 and len(tactics) == 87
    kinds = {decode_kernel(t).kind for t in tactics}
    assert kinds == {"xmma", "cudnn", "cutlass"}
    assert all(decode_kernel(t).precision in {"FP32", "TF32", "FP16", "INT8"} for t in tactics)
    # every tactic the 8.5 builder timed in the verbose log (251 names)
    log = (root / "trex-notebooks-src-2023" / "trt.out").read_text()
    timed = set(re.findall(r"Set Tactic Name: (\S+)", log))
    assert len(timed) == 251
    assert all(decode_kernel(t).kind in {"xmma", "cudnn"} for t in timed)
    assert all(decode_kernel(t).precision in {"FP32", "INT8"} for t in timed)
    for name in layers:
        d = decode_layer(name)
        assert d.ops and d.summary, name
    layer_kinds = {decode_layer(n).kind for n in layers}
    assert {
        "fused-layer",
        "reformat",
        "pointwise",
        "myelin-region",
        "shape-sync",
        "unnamed-layer",
        "plain",
    } <= layer_kinds


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.text(max_size=120))
def test_hostile_names_never_raise(name: str) -> None:
    for fn in (decode, decode_kernel, decode_layer):
        d = fn(name)
        assert d.name == name and isinstance(d.summary, str)


@pytest.mark.parametrize(
    "name",
    [
        "PWN(" * 3000 + "a" + ")" * 3000,  # nesting: no recursion error
        "a" + "_myl1_2" * 3000,
        "a + " * 20000,
        "__myl_" + "Add" * 20000,
        "{ForeignNode[" + "a..." * 10000 + "]}",
    ],
)
def test_pathological_names_decode(name: str) -> None:
    for fn in (decode, decode_kernel, decode_layer):
        assert fn(name).summary
