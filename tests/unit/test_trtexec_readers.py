"""trtexec readers: profile, times, layer info (both forms), text log; salvage and fuzz."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.trt_builders import layer_info_text, log_text, names_only_text, profile_text, times_text

from stepscope.errors import StepscopeError, TraceFormatError
from stepscope.formats.tensorrt.exports import dtype_of, read_layer_info, read_profile, read_times
from stepscope.formats.tensorrt.log import parse_stat, read_log, version_of

SETTINGS = settings(
    max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
HOSTILE = [
    'a "quoted" layer',
    "back\\slash",
    "<script>alert(1)</script>",
    "{ForeignNode[a...b]}",
    "x, y",
    "💥",
    "[profile 1]",
    "PWN(PWN(a + b), c)",
    "\t tab",
]


def test_profile_valid_and_count() -> None:
    p = read_profile(
        profile_text([("conv", 1.5), ("relu [profile 1]", 0.5)], count=4).encode(), "p"
    )
    assert p.count == 4 and not p.salvaged
    assert [lt.name for lt in p.layers] == ["conv", "relu [profile 1]"]
    assert p.layers[0].time_ms == pytest.approx(6.0) and p.layers[0].average_ms == 1.5
    assert p.layers[1].profile == 1 and p.layers[0].percentage == pytest.approx(75.0)


@pytest.mark.parametrize("name", HOSTILE)
def test_profile_unescaped_names_are_salvaged(name: str) -> None:
    p = read_profile(profile_text([(name, 2.0), ("b", 1.0)], count=3).encode(), "p")
    assert p.layers[0].name == name and p.count == 3
    assert p.layers[0].average_ms == 2.0
    assert p.salvaged == ('"' in name or "\\" in name or "\t" in name)


def test_profile_without_median_and_cpp_numbers() -> None:
    text = profile_text([('q"x', 1.0)], median=False).replace(
        '"averageMs" : 1', '"averageMs" : -nan'
    )
    p = read_profile(text.encode(), "p")
    assert p.layers[0].median_ms is None and math.isnan(p.layers[0].average_ms)


def test_profile_garbage_is_one_line_error() -> None:
    with pytest.raises(TraceFormatError, match=r"^p: "):
        read_profile(b"[1, 2", "p")
    with pytest.raises(TraceFormatError):
        read_profile(b'{"a": 1}', "p")


def test_times() -> None:
    t = read_times(times_text([1.0, 2.0, 3.0], enq=0.2, h2d=0.5).encode(), "t")
    assert len(t) == 3
    assert t.compute.tolist() == [1.0, 2.0, 3.0]
    assert t.latency.tolist() == [1.5, 2.5, 3.5]
    assert (t.end_enq - t.start_enq).tolist() == pytest.approx([0.2] * 3)
    with pytest.raises(TraceFormatError):
        read_times(b"[]", "t")


def test_layer_info_detailed_with_unescaped_quotes() -> None:
    text = layer_info_text(
        [
            {
                "name": 'conv "1"',
                "inputs": [("in", "Row major linear FP32")],
                "outputs": [("mid", "Channel major FP16 format where channel % 8 == 0")],
                "tactic": "sm80_xmma_fprop_implicit_gemm_f16f16_f16f16_f16_nhwckrsc_nhwc_"
                "tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16",
            },
            {
                "name": "back\\slash",
                "type": "Reformat",
                "inputs": [("mid", "Half")],
                "outputs": [("out", "Int8")],
            },
        ]
    )
    g = read_layer_info(text.encode(), "g")
    assert g.detailed and g.salvaged
    assert [lay.name for lay in g.layers] == ['conv "1"', "back\\slash"]
    assert g.layers[0].inputs[0].dtype == "FP32" and g.layers[0].outputs[0].dtype == "FP16"
    assert g.layers[1].layer_type == "Reformat" and g.layers[1].outputs[0].dtype == "INT8"
    assert g.bindings == ("input", "output")


def test_layer_info_names_only_valid_and_salvaged() -> None:
    g = read_layer_info(names_only_text(["a", "(Unnamed Layer* 1) [Shuffle]"]).encode(), "g")
    assert not g.detailed and [lay.name for lay in g.layers] == [
        "a",
        "(Unnamed Layer* 1) [Shuffle]",
    ]
    g2 = read_layer_info(names_only_text(['say "hi"', "b"]).encode(), "g")
    assert g2.salvaged and [lay.name for lay in g2.layers] == ['say "hi"', "b"]
    assert g2.bindings == ("input", "output")


def test_dtype_names() -> None:
    assert dtype_of("Thirty-two wide channel vectorized row major Int8 format") == "INT8"
    assert dtype_of("Channel major FP16 format where channel % 8 == 0") == "FP16"
    assert (
        dtype_of("Float") == "FP32"
        and dtype_of("Half") == "FP16"
        and dtype_of("BFloat16") == "BF16"
    )
    assert dtype_of("FP8") == "FP8" and dtype_of("Int32") == "INT32" and dtype_of("weird") == "?"


def test_log_summary_warnings_options() -> None:
    text = log_text(
        gpu_median=2.0,
        enq_median=0.5,
        h2d=0.25,
        d2h=0.125,
        warnings=["* GPU compute time is unstable, with coefficient of variance = 6.2%."],
    )
    log = read_log(text.encode(), "run.log")
    assert log.version == "10.3.0" and log.passed is True
    s = log.summary
    assert s is not None and s.throughput_qps == 987.5 and s.walltime_s == pytest.approx(3.00123)
    gpu = s.get("GPU Compute Time")
    assert gpu is not None and gpu.median == 2.0 and gpu.min == pytest.approx(1.8)
    assert dict(gpu.percentiles) == {
        90.0: pytest.approx(2.1),
        95.0: pytest.approx(2.2),
        99.0: pytest.approx(2.3),
    }
    assert s.get("Latency").median == pytest.approx(2.375)  # type: ignore[union-attr]
    assert log.warnings == ("* GPU compute time is unstable, with coefficient of variance = 6.2%.",)
    assert log.option("CUDA Graph") == "Disabled" and log.option("Selected Device").startswith(
        "NVIDIA"
    )


@pytest.mark.parametrize("new_layout", [True, False])
def test_log_dump_profile_both_layouts(new_layout: bool) -> None:
    rows = [
        ("conv 1 + relu", 1.25),
        ("{ForeignNode[a...b]}", 0.5),
        ("Reformatting CopyNode for Input Tensor 0 to x", 0.25),
    ]
    log = read_log(log_text(profile_rows=rows, new_layout=new_layout).encode(), "run.log")
    assert log.profile is not None and log.profile.count == 10
    assert [(lt.name, lt.average_ms) for lt in log.profile.layers] == rows
    assert log.profile.layers[0].time_ms == pytest.approx(12.5)


def test_log_helpers() -> None:
    assert version_of("8502") == "8.5.2" and version_of("100300") == "10.3.0"
    assert parse_stat("min = 1 ms, max = 2 ms") is None
    st_ = parse_stat(
        "min = 1e-3 ms, max = 2 ms, mean = 1.5 ms, median = 1.25 ms, percentile(99%) = 1.9 ms"
    )
    assert st_ is not None and st_.min == 0.001 and st_.percentiles == ((99.0, 1.9),)
    with pytest.raises(TraceFormatError):
        read_log(b"hello", "x.log")


@SETTINGS
@given(st.binary(max_size=400), st.sampled_from(["profile", "times", "layers", "log"]))
def test_fuzz_random_bytes(data: bytes, kind: str) -> None:
    reader = {
        "profile": read_profile,
        "times": read_times,
        "layers": read_layer_info,
        "log": read_log,
    }[kind]
    try:
        reader(data, "f")
    except StepscopeError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("f: ")


@SETTINGS
@given(
    st.lists(
        st.tuples(
            st.text(max_size=30).filter(lambda s: "\n" not in s and "\r" not in s),
            st.floats(0, 1e3),
        ),
        min_size=1,
        max_size=5,
    ),
    st.integers(0, 400),
)
def test_fuzz_hostile_names_and_truncation(rows: list[tuple[str, float]], cut: int) -> None:
    text = profile_text(rows)
    try:
        p = read_profile(text.encode("utf-8", "surrogatepass"), "f")
        assert len(p.layers) == len(rows)
    except StepscopeError:
        pass
    for blob in (
        text[:cut],
        layer_info_text([{"name": n, "inputs": [("i", "Half")]} for n, _ in rows])[: cut * 4],
        log_text(profile_rows=rows)[: cut * 8],
    ):
        for reader in (read_profile, read_layer_info, read_log, read_times):
            try:
                reader(blob.encode("utf-8", "surrogatepass"), "f")
            except StepscopeError as exc:
                assert "\n" not in str(exc)


def test_layer_info_trt10_metadata_control_chars() -> None:
    """TRT 10 joins Metadata entries with a raw \\x1f: invalid JSON, repaired line by line."""
    meta = "[ONNX Layer: /attn/MatMul]\x1f[ONNX Layer: /attn/Softmax]"
    text = (
        '{"Layers": [{\n  "Name": "__myl_TraMaxSubExpSum_myl3_7",\n  "LayerType": "kgen",\n'
        '  "Inputs": [\n  {\n    "Name": "q",\n    "Location": "Device",\n'
        '    "Dimensions": [1,8],\n    "Format/Datatype": "Half"\n  }],\n'
        '  "Outputs": [],\n  "TacticName": "__myl_TraMaxSubExpSum_0x1234",\n'
        f'  "StreamId": 0,\n  "Metadata": "{meta}"\n}}],\n"Bindings": ["q"\n]}}\n'
    )
    g = read_layer_info(text.encode(), "g")
    assert g.salvaged and g.detailed
    lay = g.layers[0]
    assert lay.layer_type == "kgen" and lay.metadata == meta and lay.inputs[0].dtype == "FP16"
    assert ("StreamId", "0") in lay.extra


def test_log_trt10_one_line_layer_information() -> None:
    """The 8.6+/10.x ``Name: …, LayerType: …`` dump (--dumpLayerInfo), raw and prefixed."""
    raw = (
        "Name: __myl_MulSum_myl0_0, LayerType: kgen, Inputs: [ { Name: __mye116_dconst, "
        "Dimensions: [10,10], Format/Datatype: Float }, { Name: x, Dimensions: [10,1], "
        "Format/Datatype: Float }], Outputs: [ { Name: __myln_k_arg__bb1_2, Dimensions: [1,10], "
        "Format/Datatype: Float }], TacticName: __myl_MulSum_0xfa6c1858aea1b13b03f90165d7149ec6, "
        "StreamId: 0, Metadata: [ONNX Layer: /fc/MatMul]"
    )
    conv = (
        "Name: w + w_QuantizeLinear + conv0_fwd, LayerType: CaskConvolution, Inputs: [ { Name: a, "
        "Location: Device, Dimensions: [4,64,56,56], Format/Datatype: Thirty-two wide channel "
        "vectorized row major Int8 format }], Outputs: [ { Name: b, Location: Device, "
        "Dimensions: [4,64,56,56], Format/Datatype: Half }]"
    )
    p = "[11/23/2026-08:00:00] [I] "
    text = "\n".join(
        [
            "&&&& RUNNING TensorRT.trtexec [TensorRT v100800] # trtexec --dumpLayerInfo",
            p + "Layer Information:",
            p + "Layers:",
            raw,
            p + conv,
            p + "Bindings:",
            p + "x",
        ]
    )
    log = read_log(text.encode(), "l.log")
    assert log.version == "10.8.0" and log.graph is not None
    a, b = log.graph.layers
    assert a.name == "__myl_MulSum_myl0_0" and a.layer_type == "kgen"
    assert [t.name for t in a.inputs] == ["__mye116_dconst", "x"] and a.inputs[0].dims == (10, 10)
    assert a.outputs[0].dtype == "FP32" and a.metadata == "[ONNX Layer: /fc/MatMul]"
    assert a.tactic_name == "__myl_MulSum_0xfa6c1858aea1b13b03f90165d7149ec6"
    assert ("StreamId", "0") in a.extra
    assert b.layer_type == "CaskConvolution" and b.inputs[0].dtype == "INT8"
    assert b.outputs[0].dtype == "FP16" and b.inputs[0].dims == (4, 64, 56, 56)


@pytest.mark.parametrize(
    ("reader", "data"),
    [
        (read_profile, "[\n" + '{ "name" : "' * 20000 + "\n]"),  # quadratic for a naive regex
        (read_profile, "[\n" + '{ "name" : "a", "timeMs" : ' * 20000 + "\n]"),  # deep nesting
        (read_times, "[" * 50000),
        (read_layer_info, '{"Layers": ' + "[" * 50000),
        (read_log, "&&&& RUNNING TensorRT.trtexec\nLayer(x): n, Tactic: 0x1, " + "a, " * 30000),
    ],
)
def test_hostile_shapes_fail_fast_and_cleanly(reader: object, data: str) -> None:
    try:
        reader(data.encode(), "f")  # type: ignore[operator]
    except StepscopeError as exc:
        assert str(exc).startswith("f: ")


def test_profile_first_element_is_metadata() -> None:
    text = (
        '[{ "count" : 7, "profile" : 0 }\n'
        ', { "name" : "a", "timeMs" : 7, "averageMs" : 1, "percentage" : 100 }]'
    )
    p = read_profile(text.encode(), "p")
    assert p.count == 7 and [lt.name for lt in p.layers] == ["a"]
    p2 = read_profile(b'[{"other": 1}, {"name": "a", "timeMs": 1}]', "p")
    assert p2.count is None and p2.layers[0].average_ms == 0.0


def test_log_names_tactics_from_builder_lines() -> None:
    p = "[11/23/2026-08:00:00] "
    text = "\n".join(
        [
            "&&&& RUNNING TensorRT.trtexec [TensorRT v8502] # trtexec --verbose",
            p + "[V] [TRT] conv_1 Set Tactic Name: "
            "sm80_xmma_fprop_implicit_gemm_interleaved_i8i8_i8i32_"
            "f32_nchw_vect_c_32kcrs_vect_c_32_nchw_vect_c_32_tilesize96x64x64_stage3_warpsize2x2x1_g1_"
            "tensor16x8x32 Tactic: 0xABCDEF0123456789",
            p + "[V] [TRT] Engine Layer Information:",
            "Layer(CaskConvolution): conv_1, Tactic: 0xabcdef0123456789, in (Int8[1,64:32,8,8]) -> "
            "out (Int8[1,64:32,8,8])",
            "Layer(Reformat): r, Tactic: 0x0000000000000000, out (Int8[1,64:32,8,8]) -> "
            "o (Float[1,64,8,8])",
        ]
    )
    log = read_log(text.encode(), "l.log")
    assert log.graph is not None
    conv, ref = log.graph.layers
    assert conv.tactic_name.startswith("sm80_xmma_fprop") and ref.tactic_name == ""
    assert ref.inputs[0].dtype == "INT8" and ref.outputs[0].dtype == "FP32"


def test_times_beyond_any_run_are_missing_not_summed() -> None:
    # a corrupt record (a value near float's maximum) would overflow every mean and sum
    # taken over the column, with numpy's warnings on the user's terminal
    text = ('[{ "startEnqMs" : 1, "endEnqMs" : 1.01, "computeMs" : 0.5, "latencyMs" : 1.6e308 },'
            ' { "startEnqMs" : 2, "endEnqMs" : 2.01, "computeMs" : 0.6, "latencyMs" : 0.7 }]')
    t = read_times(text.encode(), "t.json")
    assert math.isnan(t.latency[0]) and t.latency[1] == 0.7
    assert list(t.compute) == [0.5, 0.6]


def test_times_with_no_usable_compute_say_so() -> None:
    text = '[{ "startEnqMs" : 1, "computeMs" : 1e300 }, { "startEnqMs" : 2, "computeMs" : 1e301 }]'
    with pytest.raises(TraceFormatError, match=r"t\.json: no usable computeMs .* 1e\+12 ms"):
        read_times(text.encode(), "t.json")
    with pytest.raises(TraceFormatError, match=r"t\.json: not a trtexec --exportTimes file"):
        read_times(b'[{ "startEnqMs" : 1 }]', "t.json")
