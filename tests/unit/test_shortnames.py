"""stepscope.shortnames: short names are whole pieces of the full name, never fragments."""

from __future__ import annotations

import re

from stepscope.shortnames import (
    collapse_templates,
    drop_return_type,
    elide_args,
    short_name,
    short_names,
    simplify,
)

CONV = ("void implicit_convolve_sgemm<float, float, {}, 6, 7, 3, 3, 5, 1, false, true, true>"
        "(int, int, int, float const*, int, float*, float const*, kernel_conv_params, "
        "unsigned long long, int, float, float, int, float const*, float const*, bool, int, int)")
COPY = ("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
        "at::native::{op}(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() const::"
        "{{lambda()#12}}::operator()() const::{{lambda(c10::BFloat16)#1}}>(at::TensorIterator"
        "Base&, at::native::{op}(at::TensorIteratorBase&)::{{lambda()#3}}::operator()() const::"
        "{{lambda()#12}}::operator()() const::{{lambda(c10::BFloat16)#1}} const&)::"
        "{{lambda(int)#1}}>(int, at::native::gpu_kernel_impl_nocast<at::native::{op}(at::"
        "TensorIteratorBase&)::{{lambda()#3}}::operator()() const::{{lambda()#12}}::operator()"
        "() const::{{lambda(c10::BFloat16)#1}}>(at::TensorIteratorBase&)::{{lambda(int)#1}})")


def words(text: str) -> set[str]:
    """Runs of letters and digits, split at camelCase humps: the pieces a cut may not split."""
    return {w for run in re.findall(r"[A-Za-z0-9]+", text)
            for w in re.split(r"(?<=[a-z])(?=[A-Z])", run)}


def assert_whole(short: str, full: str, width: int) -> None:
    assert len(short) <= width, short
    assert words(short) <= words(full), (short, words(short) - words(full))


def test_template_arguments_are_elided_whole() -> None:
    name = CONV.format(128)
    for width in (30, 40, 50, 60):
        short = short_name(name, width)
        assert_whole(short, name, width)
        assert short.startswith("implicit_convolve_sgemm<"), short  # the function stays
    assert short_name(name, 40) == "implicit_convolve_sgemm<…, true, true>"
    assert elide_args("f<a, bb, c, dd>", 11) == "f<…, c, dd>"
    assert elide_args("f<a, bb, c, dd>", 11, must=1) == "f<a, bb, …>"
    assert elide_args("no_template_here", 10) is None


def test_lambdas_and_inner_parameter_lists_go_first() -> None:
    name = COPY.format(op="direct_copy_kernel_cuda")
    assert simplify(name) == ("elementwise_kernel<128, 4, "
                              "gpu_kernel_impl_nocast<direct_copy_kernel_cuda>>")
    assert short_name(name, 80) == simplify(name)
    assert collapse_templates("a<b<c>, d>") == "a<b<…>, d>"


def test_similar_kernels_differ_by_the_argument_that_differs() -> None:
    names = [CONV.format(1024), CONV.format(128)]
    shorts = short_names(names, 40)
    assert shorts == ["implicit_convolve_sgemm<…, 1024, 6, …>",
                      "implicit_convolve_sgemm<…, 128, 6, 7, …>"]
    copies = [COPY.format(op=op) for op in ("direct_copy_kernel_cuda", "neg_kernel_cuda")]
    for width in (40, 50, 60):
        shorts = short_names(copies, width)
        assert len(set(shorts)) == 2, shorts
        for short, full in zip(shorts, copies, strict=True):
            assert_whole(short, full, width)


def test_names_without_templates_keep_whole_words() -> None:
    name = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_kernel"
    for width in (20, 30, 45):
        assert_whole(short_name(name, width), name, width)
    layers = [f"resnet50/conv{s}_block{b}_2_conv/Conv2D + resnet50/conv{s}_block{b}_2_relu/Relu"
              for s in (2, 4, 5) for b in (1, 2, 3)]
    for width in (18, 24, 40):
        shorts = short_names(layers, width)
        assert len(set(shorts)) == len(layers), shorts
        for short, full in zip(shorts, layers, strict=True):
            assert_whole(short, full, width)


# vLLM's kernels on a B200 (tracelens-b200-eager): an anonymous namespace at the very start,
# and a return type spelled as SFINAE void
ANON = ("void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>"
        "(c10::BFloat16*, unsigned long, unsigned int**, unsigned long, unsigned long)")
SFINAE = ("std::enable_if<(((8)>(0)))&&vllm::_typeConvert<c10::BFloat16>::exists, void>::type "
          "vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, long, "
          "c10::BFloat16*, c10::BFloat16 const*, float, int, int)")


def test_return_types_and_anonymous_namespaces_go_whole() -> None:
    assert simplify(ANON) == "multimem_all_reduce_kernel<BFloat16, 16>"
    assert simplify(SFINAE) == "fused_add_rms_norm_kernel<BFloat16, 8>"
    assert drop_return_type(SFINAE).startswith("vllm::fused_add_rms_norm_kernel<")
    for name in (ANON, SFINAE):
        for width in (28, 40, 48):
            short = short_name(name, width)
            assert_whole(short, name, width)
            assert "(" not in short and "enable_if" not in short, short
    # a name that only starts like one keeps its start; a device copy keeps its spaces
    assert drop_return_type("enable_if_ready<3>") == "enable_if_ready<3>"
    assert drop_return_type("Memcpy HtoD (Pageable -> Device)") == \
        "Memcpy HtoD (Pageable -> Device)"
