"""Work models: FLOPs and bytes moved by one operator call, from its recorded inputs.

Kineto writes, per host operator, the input shapes (``Input Dims``), dtypes (``Input type``)
and scalar arguments (``Concrete Inputs``; PyTorch >= 2.1). ``model_op`` turns one such
record into a ``Work`` (family, FLOPs, bytes, dtype) or ``None`` when no formula applies:
unknown operators are reported as "no model", never guessed. Formulas (docs/metrics.md
"Work models") follow ``torch.utils.flop_counter`` for the families it counts (matmuls,
convolutions, attention) so the two agree exactly; the other families count per element.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

# Families whose FLOPs run on matrix units (Tensor Cores / MFMA): they use the dtype's matrix
# peak; every other family is compared with the vector peak.
MATRIX_FAMILIES = frozenset({"matmul", "conv", "attention"})

# "Input type" spelling -> (dtype key of the peak table or a plain name, bytes per element)
DTYPE_BYTES: dict[str, tuple[str, float]] = {
    "double": ("fp64", 8), "Double": ("fp64", 8),
    "float": ("fp32", 4), "Float": ("fp32", 4),
    "c10::Half": ("fp16", 2), "Half": ("fp16", 2),
    "c10::BFloat16": ("bf16", 2), "BFloat16": ("bf16", 2),
    "c10::Float8_e4m3fn": ("fp8", 1), "c10::Float8_e5m2": ("fp8", 1),
    "c10::Float8_e4m3fnuz": ("fp8", 1), "c10::Float8_e5m2fnuz": ("fp8", 1),
    "c10::Float8_e8m0fnu": ("fp8", 1), "c10::Float4_e2m1fn_x2": ("fp4", 1),
    "long int": ("int64", 8), "long": ("int64", 8), "int": ("int32", 4),
    "short int": ("int16", 2), "signed char": ("int8", 1), "unsigned char": ("uint8", 1),
    "bool": ("bool", 1), "c10::complex<float>": ("complex64", 8),
    "c10::complex<double>": ("complex128", 16), "c10::complex<c10::Half>": ("complex32", 4),
}


@dataclass(frozen=True)
class Work:
    family: str  # matmul | conv | attention | norm | softmax | elementwise | reduction | ...
    flops: float
    bytes: float
    dtype: str  # dtype key of the main input ("fp32", "bf16", ...), "" when unknown
    mnk: tuple[int, int, int] | None = None  # matmul problem size (per batch), for alignment


@dataclass(frozen=True)
class OpRecord:
    """One operator's recorded inputs, decoded."""

    name: str
    dims: list[Any]
    types: list[str]
    concrete: list[str]
    strides: list[Any]

    def shape(self, i: int) -> list[int] | None:
        """Input i's shape when it is a tensor (a list of ints), else None."""
        if i >= len(self.dims):
            return None
        d = self.dims[i]
        if not isinstance(d, list) or (d and not all(isinstance(x, int) for x in d)):
            return None
        if i < len(self.types) and self.types[i] not in DTYPE_BYTES:
            return None
        return d

    def dtype(self, i: int) -> tuple[str, float]:
        t = self.types[i] if i < len(self.types) else ""
        return DTYPE_BYTES.get(t, ("", 4))

    def tensors(self) -> list[tuple[list[int], float, int]]:
        """Every tensor input (tensor lists flattened): (shape, bytes per element, distinct
        elements: dimensions with stride 0, i.e. broadcast by ``expand``, count once)."""
        out: list[tuple[list[int], float, int]] = []
        for i, d in enumerate(self.dims):
            t = self.types[i] if i < len(self.types) else ""
            if t in DTYPE_BYTES and isinstance(d, list) and all(isinstance(x, int) for x in d):
                st = self.strides[i] if i < len(self.strides) else None
                distinct = numel(d)
                if isinstance(st, list) and len(st) == len(d):
                    distinct = numel([x for x, y in zip(d, st, strict=True) if y != 0])
                out.append((d, DTYPE_BYTES[t][1], distinct))
            elif t == "TensorList" and isinstance(d, list):
                out.extend((s, 4.0, numel(s)) for s in d if isinstance(s, list) and s)
        return out

    def tensor_list(self, i: int) -> list[list[int]]:
        if i >= len(self.dims) or not isinstance(self.dims[i], list):
            return []
        return [s for s in self.dims[i] if isinstance(s, list)]

    def ints(self, i: int) -> list[int] | None:
        """A ScalarList argument such as a stride: "[2, 2]" -> [2, 2]."""
        if i >= len(self.concrete):
            return None
        try:
            v = msgspec.json.decode(self.concrete[i])
        except msgspec.DecodeError:
            return None
        if isinstance(v, list) and all(isinstance(x, int) for x in v):
            return v
        if isinstance(v, int) and not isinstance(v, bool):
            return [v]
        return None

    def flag(self, i: int) -> bool | None:
        c = self.concrete[i] if i < len(self.concrete) else ""
        return True if c == "True" else False if c == "False" else None

    def bool_list(self, i: int) -> list[bool] | None:
        c = self.concrete[i] if i < len(self.concrete) else ""
        if not (c.startswith("[") and c.endswith("]")):
            return None
        items = [x.strip() for x in c[1:-1].split(",") if x.strip()]
        if not all(x in ("True", "False") for x in items):
            return None
        return [x == "True" for x in items]


def decode(name: str, dims: str, types: str, concrete: str, strides: str = "") -> OpRecord:
    def load(text: str) -> list[Any]:
        if not text:
            return []
        try:
            v = msgspec.json.decode(text)
        except msgspec.DecodeError:
            return []
        return v if isinstance(v, list) else []

    return OpRecord(name, load(dims), [str(t) for t in load(types)],
                    [str(c) for c in load(concrete)], load(strides))


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape) if shape else 1


def _broadcast(shapes: Sequence[Sequence[int]]) -> list[int]:
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for k, v in enumerate(s):
            j = n - len(s) + k
            out[j] = v if out[j] == 1 else out[j]
    return out


# ---- matrix families ------------------------------------------------------------------


def _mm_like(r: OpRecord, ia: int, ib: int, extra_out: bool) -> Work | None:
    a, b = r.shape(ia), r.shape(ib)
    if a is None or b is None or not a or not b:
        return None
    a2 = [1, a[0]] if len(a) == 1 else a
    b2 = [b[0], 1] if len(b) == 1 else b
    m, k, k2, n = a2[-2], a2[-1], b2[-2], b2[-1]
    if k != k2:
        return None
    batch = numel(_broadcast([a2[:-2], b2[:-2]]))
    dtype, es = r.dtype(ia)
    flops = 2.0 * batch * m * n * k
    out = batch * m * n
    nbytes = (numel(a) + numel(b) + out * (2 if extra_out else 1)) * es
    return Work("matmul", flops, nbytes, dtype, (m, n, k))


def _mm(r: OpRecord) -> Work | None:
    return _mm_like(r, 0, 1, False)


def _addmm(r: OpRecord) -> Work | None:  # addmm(bias, a, b), baddbmm(c, a, b)
    return _mm_like(r, 1, 2, True)


def _linear(r: OpRecord) -> Work | None:  # linear(x[..., K], w[N, K], bias)
    x, w = r.shape(0), r.shape(1)
    if x is None or w is None or len(w) != 2 or not x or x[-1] != w[1]:
        return None
    m, k, n = numel(x[:-1]), w[1], w[0]
    dtype, es = r.dtype(0)
    bias = r.shape(2)
    nbytes = (m * k + k * n + m * n + (numel(bias) if bias else 0)) * es
    return Work("matmul", 2.0 * m * n * k, nbytes, dtype, (m, n, k))


# ---- convolutions ---------------------------------------------------------------------

# op name -> argument positions of (stride, padding, dilation, transposed, groups); -1 = absent
_CONV_ARGS: dict[str, tuple[int, int, int, int, int]] = {
    "aten::conv1d": (3, 4, 5, -1, 6),
    "aten::conv2d": (3, 4, 5, -1, 6),
    "aten::conv3d": (3, 4, 5, -1, 6),
    "aten::convolution": (3, 4, 5, 6, 8),
    "aten::_convolution": (3, 4, 5, 6, 8),
    "aten::convolution_overrideable": (3, 4, 5, 6, 8),
    "aten::cudnn_convolution": (3, 2, 4, -1, 5),
    "aten::miopen_convolution": (4, 3, 5, -1, 6),
    "aten::mkldnn_convolution": (4, 3, 5, -1, 6),
    "aten::_slow_conv2d_forward": (4, 5, -1, -1, -1),
    "aten::thnn_conv2d": (4, 5, -1, -1, -1),
}


def _conv_flops(x: Sequence[int], w: Sequence[int], out_spatial: Sequence[int],
                transposed: bool) -> float:
    """torch.utils.flop_counter.conv_flop_count: 2 * N * Cout * Cin/g * prod(k) * prod(sp)."""
    conv_spatial = x[2:] if transposed else out_spatial
    return 2.0 * x[0] * w[0] * w[1] * numel(w[2:]) * numel(conv_spatial)


def _conv(r: OpRecord) -> Work | None:
    pos = _CONV_ARGS.get(r.name)
    x, w = r.shape(0), r.shape(1)
    if pos is None or x is None or w is None or len(x) < 3 or len(x) != len(w):
        return None
    nsp = len(x) - 2
    stride_i, pad_i, dil_i, tr_i, _groups = pos  # groups: weight dim 1 is C_in / groups

    def arg(i: int, default: int) -> list[int] | None:
        if i < 0:
            return [default] * nsp
        v = r.ints(i)
        if v is None:
            return None
        return v * nsp if len(v) == 1 else v

    stride, dil = arg(stride_i, 1), arg(dil_i, 1)
    padding_text = r.concrete[pad_i] if 0 <= pad_i < len(r.concrete) else ""
    pad = [0] * nsp if padding_text in ("valid", "'valid'") else arg(pad_i, 0)
    same = padding_text in ("same", "'same'")
    transposed = bool(r.flag(tr_i)) if tr_i >= 0 else False
    if transposed or stride is None or dil is None or (pad is None and not same):
        # transposed convolutions need output_padding for their shape: left unmodelled
        return None
    if same:
        out_sp = list(x[2:])
    else:
        assert pad is not None
        out_sp = [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1
                  for i in range(nsp)]
    if min(out_sp) <= 0:
        return None
    dtype, es = r.dtype(0)
    out = x[0] * w[0] * numel(out_sp)
    bias = r.shape(2) if r.name not in ("aten::cudnn_convolution",) else None
    nbytes = (numel(x) + numel(w) + out + (numel(bias) if bias else 0)) * es
    return Work("conv", _conv_flops(x, w, out_sp, False), nbytes, dtype)


def _conv_backward(r: OpRecord) -> Work | None:
    # convolution_backward(grad_out, input, weight, bias_sizes, stride, padding, dilation,
    #                      transposed, output_padding, groups, output_mask)
    # cudnn_convolution_backward(input, grad_out, weight, padding, stride, dilation, groups,
    #                            benchmark, deterministic, allow_tf32, output_mask)  (<= 1.10)
    cudnn = r.name == "aten::cudnn_convolution_backward"
    g, x, w = r.shape(1 if cudnn else 0), r.shape(0 if cudnn else 1), r.shape(2)
    if g is None or x is None or w is None or len(g) < 3 or len(x) != len(g):
        return None
    transposed = False if cudnn else bool(r.flag(7))
    # without Concrete Inputs (PyTorch < 2.1) both gradients are assumed computed
    mask = r.bool_list(10) or [True, True, False]
    flops = 0.0
    if mask[0]:  # grad_input as conv_transpose(grad_out, weight)
        flops += _conv_flops(g, w, x[2:], not transposed)
    if len(mask) > 1 and mask[1]:  # grad_weight as conv(input, grad_out), batch <-> channel

        def t(s: Sequence[int]) -> list[int]:
            return [s[1], s[0], *s[2:]]

        if transposed:
            flops += _conv_flops(t(g), t(x), w[2:], False)
        else:
            flops += _conv_flops(t(x), t(g), w[2:], False)
    dtype, es = r.dtype(0)
    nbytes = (2 * numel(g) + 2 * numel(x) + 2 * numel(w)) * es
    return Work("conv", flops, nbytes, dtype)


# ---- attention ------------------------------------------------------------------------

# op name -> (layout "bhsd" | "bshd", is_causal argument position, backward)
_ATTENTION: dict[str, tuple[str, int, bool]] = {
    "aten::scaled_dot_product_attention": ("bhsd", 5, False),
    "aten::_scaled_dot_product_flash_attention": ("bhsd", 4, False),
    "aten::_scaled_dot_product_flash_attention_for_cpu": ("bhsd", 4, False),
    "aten::_scaled_dot_product_efficient_attention": ("bhsd", 6, False),
    "aten::_scaled_dot_product_cudnn_attention": ("bhsd", 6, False),
    "aten::_flash_attention_forward": ("bshd", 8, False),
    "aten::_efficient_attention_forward": ("bshd", -1, False),
    "aten::_scaled_dot_product_flash_attention_backward": ("bhsd", 11, True),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": ("bhsd", 7, True),
    "aten::_scaled_dot_product_efficient_attention_backward": ("bhsd", 11, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": ("bhsd", 14, True),
    "aten::_flash_attention_backward": ("bshd", 11, True),
}


def causal_fraction(s_q: int, s_k: int) -> float:
    """Share of the s_q x s_k score matrix a causal (top-left aligned) mask keeps."""
    if s_q <= 0 or s_k <= 0:
        return 1.0
    kept = s_q * (s_q + 1) / 2 if s_q <= s_k else s_k * (s_k + 1) / 2 + (s_q - s_k) * s_k
    return kept / (s_q * s_k)


def _attention(r: OpRecord) -> Work | None:
    layout, causal_i, backward = _ATTENTION[r.name]
    first = 1 if backward else 0  # backward ops start with grad_out
    q, k, v = r.shape(first), r.shape(first + 1), r.shape(first + 2)
    if q is None or k is None or v is None or len(q) != 4 or len(k) != 4 or len(v) != 4:
        return None
    if layout == "bshd":
        q, k, v = ([s[0], s[2], s[1], s[3]] for s in (q, k, v))
    b, h, s_q, d_q = q
    s_k, d_v = k[2], v[3]
    # flop_counter.sdpa_flop_count: q @ k^T and attn @ v; the backward recomputes the
    # scores, then grad scores, grad v, grad q and grad k (3 bmm over d_q, 2 over d_v)
    if backward:
        flops = 2.0 * b * h * s_q * s_k * (3 * d_q + 2 * d_v)
    else:
        flops = 2.0 * b * h * s_q * s_k * (d_q + d_v)
    causal = r.flag(causal_i) if causal_i >= 0 else None
    if causal:
        flops *= causal_fraction(s_q, s_k)
    dtype, es = r.dtype(first)
    io = numel(q) + numel(k) + numel(v) + b * h * s_q * d_v
    nbytes = (io * 2 if backward else io) * es
    return Work("attention", flops, nbytes, dtype)


# ---- per-element families -------------------------------------------------------------

# FLOPs per element (output elements for elementwise ops, input elements for the rest)
_ELEMENTWISE = {
    "add", "sub", "mul", "div", "neg", "abs", "relu", "gelu", "silu", "sigmoid", "tanh",
    "exp", "log", "pow", "sqrt", "rsqrt", "clamp", "clamp_min", "clamp_max", "where",
    "threshold", "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward",
    "tanh_backward", "hardtanh", "hardtanh_backward", "leaky_relu", "elu", "erf", "sin", "cos",
    "reciprocal", "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "logical_and",
    "logical_or", "logical_not", "bitwise_and", "bitwise_or", "bitwise_not", "rsub", "lerp",
    "addcmul", "addcdiv", "masked_fill", "nan_to_num", "sign", "floor", "ceil", "round",
    "dropout", "native_dropout", "native_dropout_backward", "bernoulli", "isneginf", "isinf",
    "isnan", "log1p", "expm1", "square", "fmod", "remainder", "hardswish", "mish",
    "log_sigmoid_forward", "softplus", "exponential", "uniform", "normal",
}
_UNARY = {
    "neg", "abs", "relu", "gelu", "silu", "sigmoid", "tanh", "exp", "log", "sqrt", "rsqrt",
    "clamp", "clamp_min", "clamp_max", "threshold", "hardtanh", "leaky_relu", "elu", "erf",
    "sin", "cos", "reciprocal", "logical_not", "bitwise_not", "nan_to_num", "sign", "floor",
    "ceil", "round", "dropout", "bernoulli", "isneginf", "isinf", "isnan", "log1p", "expm1",
    "square", "hardswish", "mish", "log_sigmoid_forward", "softplus", "exponential", "uniform",
    "normal", "native_dropout",
}
_TERNARY = {"where", "addcmul", "addcdiv", "lerp", "hardtanh_backward"}
_FILL = {"fill", "zero", "zeros_like", "ones_like", "full_like", "zeros", "ones", "full"}
_REDUCTIONS = {"sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm",
               "var", "std", "var_mean", "std_mean", "prod", "all", "any", "argmax", "argmin",
               "logsumexp", "cumsum"}
_COPIES = {"copy", "_to_copy", "clone", "cat", "stack", "index_select", "gather", "index",
           "index_add", "index_copy", "scatter", "scatter_add", "constant_pad_nd",
           "_pin_memory", "masked_select", "embedding_dense_backward",
           "embedding_backward", "repeat", "roll", "flip"}
_NORMS = {"layer_norm": 5, "native_layer_norm": 5, "group_norm": 5, "native_group_norm": 5,
          "batch_norm": 5, "native_batch_norm": 5, "_batch_norm_impl_index": 5,
          "cudnn_batch_norm": 5, "miopen_batch_norm": 5, "_native_batch_norm_legit": 5,
          "_native_batch_norm_legit_no_training": 5, "instance_norm": 5, "rms_norm": 4,
          "_fused_rms_norm": 4, "native_layer_norm_backward": 10,
          "native_batch_norm_backward": 10, "cudnn_batch_norm_backward": 10,
          "native_group_norm_backward": 10, "_fused_rms_norm_backward": 8,
          "fused_add_rms_norm": 5}
_SOFTMAX = {"softmax": 5, "_softmax": 5, "log_softmax": 5, "_log_softmax": 5,
            "_safe_softmax": 5, "_softmax_backward_data": 4, "_log_softmax_backward_data": 4}
# Views, metadata and allocations: no FLOPs, no bytes (allocation is not memory traffic).
_NO_WORK = {
    "view", "reshape", "_reshape_alias", "_unsafe_view", "t", "transpose", "permute",
    "as_strided", "expand", "expand_as", "slice", "select", "unsqueeze", "squeeze", "detach",
    "alias", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "resize_", "split", "split_with_sizes", "chunk", "unbind", "narrow", "flatten",
    "unflatten", "resolve_conj", "resolve_neg", "lift_fresh", "set_", "record_stream",
    "item", "_local_scalar_dense", "is_nonzero", "result_type", "contiguous", "to",
    "numpy_T", "movedim", "view_as", "is_pinned", "conj", "type_as", "unfold",
}
_FOREACH_FLOPS = {"_foreach_add": 1, "_foreach_sub": 1, "_foreach_mul": 1, "_foreach_div": 1,
                  "_foreach_sqrt": 1, "_foreach_lerp": 3, "_foreach_addcmul": 2,
                  "_foreach_addcdiv": 2, "_foreach_neg": 1, "_foreach_maximum": 1,
                  "_foreach_norm": 2, "_foreach_copy": 0, "_foreach_zero": 0,
                  "_foreach_reciprocal": 1, "_foreach_pow": 1, "_foreach_sign": 1}
# fused optimizers: (FLOPs per parameter element, tensors read+written per element)
_FUSED_OPT = {"_fused_adam": (12, 7), "_fused_adamw": (13, 7), "_fused_sgd": (3, 4),
              "_fused_adagrad": (6, 5)}


def _base(name: str) -> str:
    """``aten::add_`` -> ``add``; ``aten::_foreach_add_`` -> ``_foreach_add``."""
    short = name.split("::", 1)[-1].split(".", 1)[0]
    return short[:-1] if short.endswith("_") and not short.endswith("__") else short


def _per_element(r: OpRecord, base: str) -> Work | None:
    tensors = r.tensors()
    if not tensors:
        return None
    first = next((i for i in range(len(r.types)) if r.types[i] in DTYPE_BYTES), 0)
    dtype, es = r.dtype(first)
    if base in _ELEMENTWISE:
        # tensors beyond the op's arity are an ``out=`` argument (older PyTorch records it)
        tensors = tensors[: 1 if base in _UNARY else 3 if base in _TERNARY else 2]
        out = numel(_broadcast([s for s, _, _ in tensors]))
        in_bytes = sum(n * e for _, e, n in tensors)
        return Work("elementwise", float(out), in_bytes + out * es, dtype)
    in_bytes = sum(n * e for _, e, n in tensors)
    if base in _FILL:
        n = numel(tensors[0][0])
        return Work("elementwise", 0.0, n * es, dtype)
    if base in _REDUCTIONS:
        n = numel(tensors[0][0])
        return Work("reduction", float(n), in_bytes, dtype)
    if base in _NORMS:
        n = numel(tensors[0][0])
        return Work("norm", float(_NORMS[base] * n), in_bytes + n * es, dtype)
    if base in _SOFTMAX:
        n = numel(tensors[0][0])
        return Work("softmax", float(_SOFTMAX[base] * n), in_bytes + n * es, dtype)
    if base in _COPIES:
        if base == "copy":  # copy_(dst, src): read src, write dst
            return Work("copy", 0.0, in_bytes, dtype)
        if base in ("index_select", "gather", "index"):
            return None  # output size depends on the index, modelled below when possible
        return Work("copy", 0.0, 2 * in_bytes, dtype)
    return None


def _embedding(r: OpRecord) -> Work | None:  # embedding(weight[V, D], indices)
    w, idx = r.shape(0), r.shape(1)
    if w is None or idx is None or len(w) != 2:
        return None
    dtype, es = r.dtype(0)
    _, ies = r.dtype(1)
    rows = numel(idx)
    return Work("embedding", 0.0, rows * w[1] * es * 2 + rows * ies, dtype)


def _index_select(r: OpRecord) -> Work | None:  # index_select(self, dim, index)
    x, idx = r.shape(0), r.shape(2)
    dim = r.ints(1)
    if x is None or idx is None or dim is None or not x:
        return None
    d = dim[0] % len(x)
    out = numel(x) // max(x[d], 1) * numel(idx)
    dtype, es = r.dtype(0)
    return Work("copy", 0.0, 2 * out * es, dtype)


def _foreach(r: OpRecord, base: str) -> Work | None:
    lists = [r.tensor_list(i) for i in range(len(r.types)) if r.types[i] == "TensorList"]
    lists = [lst for lst in lists if lst and all(s for s in lst)]
    if not lists:
        return None
    n = sum(numel(s) for s in lists[0])
    written = 0 if base == "_foreach_norm" else 1
    # TensorList inputs carry no per-tensor dtype: 4 bytes per element (fp32 master weights)
    nbytes = 4.0 * n * (len(lists) + written)
    return Work("optimizer", float(_FOREACH_FLOPS[base] * n), nbytes, "fp32")


def _fused_optimizer(r: OpRecord, base: str) -> Work | None:
    params = r.tensor_list(0)
    if not params or not all(params):
        return None
    n = sum(numel(s) for s in params)
    flops, tensors = _FUSED_OPT[base]
    return Work("optimizer", float(flops * n), 4.0 * n * tensors, "fp32")


_BY_NAME: dict[str, Callable[[OpRecord], Work | None]] = {
    "aten::mm": _mm, "aten::bmm": _mm, "aten::matmul": _mm, "aten::_scaled_mm": _mm,
    "aten::addmm": _addmm, "aten::baddbmm": _addmm, "aten::_addmm_activation": _addmm,
    "aten::linear": _linear, "aten::convolution_backward": _conv_backward,
    "aten::cudnn_convolution_backward": _conv_backward,
    "aten::embedding": _embedding, "aten::index_select": _index_select,
    **{name: _conv for name in _CONV_ARGS},
    **{name: _attention for name in _ATTENTION},
}


def model_op(r: OpRecord) -> Work | None:
    """The work of one operator call, or None ("no model", also for malformed records)."""
    try:
        work = _model(r)
    except (ArithmeticError, IndexError, TypeError, ValueError):
        return None  # inconsistent shapes/arguments in the trace: no model, not a crash
    if work is not None and not (work.flops >= 0 and work.bytes >= 0):
        return None
    return work


def _model(r: OpRecord) -> Work | None:
    fn = _BY_NAME.get(r.name)
    if fn is not None:
        return fn(r)
    if not r.name.startswith("aten::"):
        return None
    base = _base(r.name)
    if base in _NO_WORK or r.name.split("::", 1)[1] in _NO_WORK:
        return Work("view", 0.0, 0.0, r.dtype(0)[0])
    if base in _FOREACH_FLOPS:
        return _foreach(r, base)
    if base in _FUSED_OPT:
        return _fused_optimizer(r, base)
    return _per_element(r, base)
