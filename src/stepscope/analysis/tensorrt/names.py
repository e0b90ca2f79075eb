"""Decode TensorRT layer and kernel names into readable fused-operation lists.

Every pattern table lives in this module (documented in docs/tensorrt.md). Meanings marked
"inferred" come from consistent usage in real engines, not from NVIDIA documentation.

* Myelin kernels/layers: ``__myl_<Ops>`` with CamelCase op tokens (3-letter ``ResTraCas`` or
  4-letter ``ReshTranCast``), suffixes ``_myl<R>_<I>`` (region R, layer I; TRT 10 layers),
  ``_0x<hash>`` (TRT 10 kernels), ``bb<B>_<K>_..._com_vec`` (TRT 8 kernels).
* Myelin layer names: ``{ForeignNode[first...last]}`` (TRT <= 8.6), ``$$myelin$$/scope`` tags.
* Kernel families: xmma (``sm80_xmma_fprop_implicit_gemm_f16f16_...``), cuDNN-style
  (``ampere_h16816cudnn_...``), CUTLASS, cuBLAS JIT ``nvjet_*``, ``generatedNativePointwise``,
  ``genericReformat``, fused attention (``fmha``/``mha_v2``).
* Builder layer names: ``a + b + c`` fusions, ``PWN(...)`` pointwise fusions,
  ``Reformatting CopyNode for ...``, ``(Unnamed Layer* N) [Type]``, ``[trainStationN]``,
  ``[DevicetoShapeHostCopy]``, `` [profile k]``, ``_clone_N``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from stepscope.classify.names import is_tensor_core_kernel

# Myelin op tokens -> operation. 3- and 4-letter spellings both occur (TRT 8.5-10.8 vs newer).
MYELIN_OPS: dict[str, str] = {
    "Res": "Reshape",
    "Resh": "Reshape",
    "Tra": "Transpose",
    "Tran": "Transpose",
    "Cas": "Cast",
    "Cast": "Cast",
    "Add": "Add",
    "Sub": "Sub",
    "Mul": "Mul",
    "Div": "Div",
    "Mea": "ReduceMean",
    "Mean": "ReduceMean",
    "Sqr": "Sqrt",
    "Sqrt": "Sqrt",
    "Neg": "Neg",
    "Exp": "Exp",
    "Sum": "ReduceSum",
    "Max": "Max",
    "Min": "Min",
    "Maxr": "ReduceMax",
    "Sli": "Slice",
    "Slic": "Slice",
    "Con": "Concat",
    "Conc": "Concat",
    "Mov": "Move",
    "Move": "Move",
    "Gat": "Gather",
    "Gath": "Gather",
    "Top": "TopK",
    "Flo": "Floor",
    "Rep": "Expand",
    "Repl": "Expand",  # replicate/broadcast; inferred
    "Erf": "Erf",
    "Roun": "Round",
    "Rou": "Round",
    "Dyna": "DynamicQuantize",  # inferred
    "Sigm": "Sigmoid",
    "Sig": "Sigmoid",
    "Silu": "SiLU",
    "Relu": "Relu",
    "Rel": "Relu",
    "Tanh": "Tanh",
    "Tan": "Tanh",
    "Pow": "Pow",
    "Abs": "Abs",
    "Log": "Log",
    "Grid": "GridSample",  # inferred
    "Inor": "InstanceNormalization",  # inferred
    "Fc": "Gemm (fused epilogue)",
    "Etc": "… (truncated)",
}

# Fused idioms recognisable from the op sequence (regex over the joined 3-letter-normalised ops).
IDIOMS: tuple[tuple[str, str], ...] = (
    ("LayerNorm", r"ReduceMean,Sub,(?:Mul|Pow),ReduceMean,Add,Sqrt,Div"),
    ("RMSNorm", r"Mul,ReduceMean,Add,Sqrt,Div"),
    ("Softmax", r"(?:ReduceMax|Max),Sub,Exp,ReduceSum"),
    ("GELU", r"Div,Erf,Add,Mul|Mul,(?:Cast,)?Erf,(?:Cast,)?Add,Mul"),
    ("Sigmoid/SiLU", r"Neg,Exp,Add,Div"),
    ("QuantizeLinear", r"Mul,Min,Max,Round,Cast"),
)

# Kernel fields worth a place in the one-line summary.
SUMMARY_FIELDS = ("arch", "CTA tile", "stages", "MMA shape", "MMA")

_CAMEL = re.compile(r"[A-Z][a-z0-9]*")
_MYL_PREFIX = re.compile(
    r"^(?:void )?__myl_(?:bb\d+_\d+_)?(?P<ops>[A-Za-z0-9]*?)"
    r"(?P<suffix>_com_vec|_0x[0-9a-fA-F]+|_myl\d+_\d+|_\d+)*(?:\(.*)?$"
)
_MYL_LAYER = re.compile(r"^(?P<base>.+?)_myl(?P<r>\d+)_(?P<i>\d+)$")
_FOREIGN = re.compile(r"^\{ForeignNode\[(?P<body>.*)\]\}$", re.S)
_PROFILE = re.compile(r" \[profile (\d+)\]$")
_UNNAMED = re.compile(r"^\(Unnamed Layer\* (?P<n>\d+)\) \[(?P<type>[^\]]+)\]")
_REFORMAT = re.compile(
    r"^Reformatting CopyNode for (?P<dir>Input|Output) Tensor (?P<n>\d+) to (?P<to>.*)$", re.S
)

# xmma / cuDNN-style / CUTLASS fields.
_SM = re.compile(r"(?:^|_)sm(?P<sm>\d{2,3})[a-z]?_")
_T = r"(?:bf16|tf32|f16|f32|f64|i8|i32|s8|s32|e4m3|e5m2|u8|i4)"
_XMMA_TYPES = re.compile(rf"(?:^|_)(?P<a>{_T}{{1,2}})_(?P<acc>{_T}{{1,2}})_(?P<out>{_T})(?=_|$)")
_TILE = re.compile(r"tilesize(?P<t>\d+x\d+x\d+)")
_STAGE = re.compile(r"_stages?(?P<s>\d+)(?:_|$)")
_WARPS = re.compile(r"warpsize(?P<w>\d+x\d+x\d+)")
_MMA = re.compile(r"_tensor(?P<m>\d+x\d+x\d+)")
_FILTER = re.compile(r"_t(?P<t>\d+)r(?P<r>\d+)s(?P<s>\d+)")
_ARCH_NAMES = ("maxwell", "pascal", "volta", "turing", "ampere", "ada", "hopper", "blackwell")
_CUDNN = re.compile(
    rf"^(?:trt_)?(?P<arch>{'|'.join(_ARCH_NAMES)})_(?:(?P<out>fp16|fp32|int8|bf16)_)?"
    r"(?P<core>[a-z0-9_]*?)(?P<lib>cudnn|gemm)(?:_(?P<rest>.*))?$"
)
_CUDNN_CORE = re.compile(r"^(?P<t>h|s|i|bf16_s|bf16|hh|)(?P<mma>\d{3,5})?$")
_CTA = re.compile(r"(?:^|_)(?P<cta>\d+x\d+)(?=_|$)")
_CUDNN_STAGES = re.compile(r"stages_(?P<k>\d+)x(?P<s>\d+)")
_NVJET = re.compile(
    r"^nvjet_(?P<types>[a-z]{2,4})_(?P<cta>\d+x\d+)_(?P<ks>\d+x\d+)_(?P<cluster>\d+x\d+)"
)

_TYPE_TOKEN = {
    "f16": "FP16",
    "h": "FP16",
    "bf16": "BF16",
    "f32": "FP32",
    "tf32": "TF32",
    "i8": "INT8",
    "s8": "INT8",
    "int8": "INT8",
    "e4m3": "FP8",
    "e5m2": "FP8",
    "fp16": "FP16",
    "fp32": "FP32",
    "f8": "FP8",
    "i4": "INT4",
    "s4": "INT4",
}
_NVJET_LETTER = {
    "h": "FP16",
    "b": "BF16",
    "t": "TF32",
    "s": "FP32",
    "e": "FP8",
    "i": "INT8",
    "q": "FP8",
}
# cuDNN-style core token -> (precision, tensor cores, MMA instruction).
_CUDNN_MMA = {
    "h16816": "FP16 HMMA m16n8k16",
    "h1688": "FP16 HMMA m16n8k8",
    "h884": "FP16 HMMA m8n8k4",
    "i8816": "INT8 IMMA m8n8k16",
    "s1688": "TF32 MMA m16n8k8",
    "s16816": "BF16/FP16 MMA m16n8k16",
}


@dataclass(frozen=True)
class DecodedName:
    """What a layer or kernel name says. ``ops`` is the readable list of fused operations."""

    name: str
    kind: str  # see KINDS
    family: str  # one readable label ("Myelin generated kernel", "xmma implicit-GEMM conv", ...)
    ops: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()
    precision: str | None = None
    tensor_cores: bool | None = None
    idioms: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        parts = [self.family]
        if self.idioms:
            parts.append("≈ " + " + ".join(self.idioms))
        if self.ops and not (len(self.ops) == 1 and self.ops[0].lower() in self.family.lower()):
            ops = " → ".join(self.ops[:12]) + (" → …" if len(self.ops) > 12 else "")
            parts.append(ops)
        if self.precision:
            parts.append(self.precision)
        fields = dict(self.fields)
        parts += [f"{k} {fields[k]}" for k in SUMMARY_FIELDS if k in fields]
        if self.tensor_cores is not None:
            parts.append("tensor cores" if self.tensor_cores else "no tensor cores")
        return " · ".join(parts)

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "family": self.family,
            "ops": list(self.ops),
            "fields": dict(self.fields),
            "precision": self.precision,
            "tensor_cores": self.tensor_cores,
            "idioms": list(self.idioms),
            "summary": self.summary,
        }


KINDS = (
    "myelin",
    "myelin-region",
    "myelin-tag",
    "attention",
    "xmma",
    "cudnn",
    "cutlass",
    "cublas-jit",
    "pointwise",
    "reformat",
    "fused-layer",
    "unnamed-layer",
    "shape-sync",
    "plain",
)


def myelin_ops(tokens: str) -> tuple[str, ...]:
    """``ResTraCasAddMea`` -> (Reshape, Transpose, Cast, Add, ReduceMean); unknown tokens kept."""
    return tuple(MYELIN_OPS.get(t, t) for t in _CAMEL.findall(tokens))


def idioms_of(ops: tuple[str, ...]) -> tuple[str, ...]:
    joined = ",".join(ops)
    found = tuple(label for label, pat in IDIOMS if re.search(pat, joined))
    if "LayerNorm" in found:  # LayerNorm contains the RMSNorm chain
        found = tuple(f for f in found if f != "RMSNorm")
    return found


def _myelin(name: str) -> DecodedName | None:
    m = _MYL_PREFIX.match(name)
    if not m or not m.group("ops"):
        return None
    ops = myelin_ops(m.group("ops"))
    fields: list[tuple[str, str]] = []
    tail = name[len("__myl_") :] if name.startswith("__myl_") else name
    if bb := re.match(r"bb(\d+)_(\d+)_", tail):
        fields.append(("basic block", f"{bb.group(1)}.{bb.group(2)}"))
    if ml := re.search(r"_myl(\d+)_(\d+)$", name):
        fields += [("region", ml.group(1)), ("layer", ml.group(2))]
    if h := re.search(r"_0x([0-9a-fA-F]+)$", name):
        fields.append(("hash", h.group(1)[:8]))
    return DecodedName(
        name, "myelin", "Myelin generated kernel", ops, tuple(fields), idioms=idioms_of(ops)
    )


def _precision(token: str) -> str | None:
    return _TYPE_TOKEN.get(token)


def _xmma(name: str) -> DecodedName:
    fields: list[tuple[str, str]] = []
    if sm := _SM.search(name):
        fields.append(("arch", f"sm{sm.group('sm')}"))
    op = "gemm"
    for cand, label in (
        ("fprop", "conv forward"),
        ("dgrad", "conv data-grad"),
        ("wgrad", "conv weight-grad"),
        ("pooling", "pooling"),
        ("gemm", "GEMM"),
    ):
        if f"_{cand}" in name:
            op = label
            break
    variant = [
        v for v in ("implicit_gemm", "interleaved", "indexed", "conv1x1", "depthwise") if v in name
    ]
    if variant:
        fields.append(("variant", ", ".join(variant)))
    precision = None
    if ty := _XMMA_TYPES.search(name.split("_xmma_", 1)[-1]):
        a = re.findall(_T, ty.group("a"))
        acc = ty.group("acc")
        fields.append(("types", f"{ty.group('a')} → {acc} → {ty.group('out')}"))
        precision = "TF32" if "tf32" in acc else _precision(a[0]) if a else None
    elif pt := re.search(r"_(FP16|FP32|INT8|BF16)(?:FP16|FP32|INT8|BF16)?(NHWC|NCHW)?", name):
        precision = pt.group(1)  # pooling: FP16FP32NHWC, nhwc_FP32FP32
        if pt.group(2):
            fields.append(("layout", pt.group(2)))
    elif pk := re.search(r"_k(FLOAT|HALF|INT8|BF16)(?:_|$)", name):
        precision = {"FLOAT": "FP32", "HALF": "FP16"}.get(pk.group(1), pk.group(1))
    if "pooling" in name and (pool := re.search(r"(?i)_(max|average|avg)(?:_|$)", name)):
        fields.append(("pooling", pool.group(1).lower()))
    for rx, label in ((_TILE, "CTA tile"), (_WARPS, "warps")):
        if mm := rx.search(name):
            fields.append((label, mm.group(1)))
    if st := _STAGE.search(name):
        fields.append(("stages", st.group("s")))
    mma = _MMA.search(name)
    if mma:
        fields.append(("MMA shape", mma.group("m")))
    if flt := _FILTER.search(name):
        fields.append(("filter", f"{flt.group('r')}x{flt.group('s')}"))
    for layout in ("nhwckrsc_nhwc", "nchw_vect_c_32", "nchw_vect_c_4", "nhwc", "nchw"):
        if layout in name and not any(k == "layout" for k, _ in fields):
            fields.append(("layout", layout))
    extras = [e for e in ("epifadd", "bias_relu", "small_batch", "simple", "aACCESS") if e in name]
    if extras:
        fields.append(("epilogue/options", ", ".join(extras)))
    tc = True if mma else (False if ("ffma" in name or "simt" in name or "pooling" in op) else None)
    return DecodedName(name, "xmma", f"xmma {op}", (op,), tuple(fields), precision, tc)


def _cudnn(name: str, m: re.Match[str]) -> DecodedName:
    core = m.group("core")
    rest = m.group("rest") or ""
    fields: list[tuple[str, str]] = [("arch", m.group("arch"))]
    precision: str | None = None
    tc: bool | None = None
    mma = None
    for key, label in _CUDNN_MMA.items():
        if core.endswith(key):
            mma = label
            break
    if mma:
        tc = True
        precision = mma.split()[0].split("/")[0]
        fields.append(("MMA", mma))
    elif core.startswith("s") or core == "":
        precision, tc = "FP32", False
    elif core.startswith("int8x4_i") or core.startswith("i"):
        precision, tc = "INT8", False
        fields.append(("MMA", "none (dp4a INT8x4)"))
    elif core.startswith("h"):
        precision = "FP16"
    if "int8x4" in name and precision is None:
        precision, tc = "INT8", False
    if m.group("out"):
        fields.append(("output", m.group("out").upper()))
    if cta := _CTA.search(rest):
        fields.append(("CTA tile", cta.group("cta")))
    if st := _CUDNN_STAGES.search(rest):
        fields += [("K tile", st.group("k")), ("stages", st.group("s"))]
    for tok, label in (("winograd", "Winograd"), ("relu", "fused ReLU"), ("sliced1x2", "sliced")):
        if tok in rest or tok in core:
            fields.append(("option", label))
    for size in ("interior", "small", "medium", "large"):
        if f"_{size}_" in f"_{rest}_":
            fields.append(("size class", size))
    if tr := re.search(r"_(nn|nt|tn|tt)_v\d+$", name):
        fields.append(("transposes", tr.group(1)))
    op = "GEMM" if m.group("lib") == "gemm" else "convolution"
    return DecodedName(name, "cudnn", f"cuDNN-style {op}", (op,), tuple(fields), precision, tc)


def _cutlass(name: str) -> DecodedName:
    fields: list[tuple[str, str]] = []
    if sm := _SM.search(name):
        fields.append(("arch", f"sm{sm.group('sm')}"))
    elif arch := re.search(rf"(?:^|_)({'|'.join(_ARCH_NAMES)})_", name):
        fields.append(("arch", arch.group(1)))
    precision = None
    for tok in re.findall(r"(?:^|_)((?:bf16|f16|f32|tf32|e4m3|e5m2|s8|i8)+)(?=_|$)", name):
        first = re.match(r"bf16|f16|f32|tf32|e4m3|e5m2|s8|i8", tok)
        if first:
            precision = _precision(first.group(0))
            fields.append(("types", tok))
            break
    tc = (
        True
        if ("tensorop" in name or "hmma" in name or "imma" in name or "wgmma" in name)
        else None
    )
    op = "conv forward" if "fprop" in name else "GEMM" if "gemm" in name else "kernel"
    if "first_layer" in name:
        fields.append(("specialisation", "first network layer"))
    return DecodedName(name, "cutlass", f"CUTLASS {op}", (op,), tuple(fields), precision, tc)


def _nvjet(name: str, m: re.Match[str]) -> DecodedName:
    letters = m.group("types")
    precision = _NVJET_LETTER.get(letters[0])
    fields = (
        ("types", letters),
        ("CTA tile", m.group("cta")),
        ("K tile x stages", m.group("ks")),
        ("cluster", m.group("cluster")),
    )
    return DecodedName(
        name,
        "cublas-jit",
        "cuBLAS JIT GEMM (nvjet)",
        ("GEMM",),
        fields,
        precision,
        precision != "FP32",
    )


def split_top(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside brackets/parentheses."""
    out: list[str] = []
    cur: list[str] = []
    depth, i = 0, 0
    while i < len(text):
        ch = text[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}" and depth > 0:
            depth -= 1
        if depth == 0 and text.startswith(sep, i):
            out.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(ch)
        i += 1
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip()]


MAX_PWN_DEPTH = 32  # real PWN(...) nests a few levels; deeper text stays one leaf


def pwn_leaves(text: str) -> list[str]:
    """``PWN(PWN(A + B, C), D)`` -> [A, B, C, D] (iterative, depth-capped)."""
    leaves: list[str] = []
    stack = [(text.strip(), 0)]
    while stack:
        t, depth = stack.pop()
        if t.startswith("PWN(") and t.endswith(")") and depth < MAX_PWN_DEPTH:
            parts = [p for part in split_top(t[4:-1], ",") for p in split_top(part, " + ")]
            stack.extend((p, depth + 1) for p in reversed(parts))
        elif t:
            leaves.append(t)
    return leaves


def _op_label(part: str) -> str:
    """A readable op for one fused part: ONNX node 'Conv_12' / '/a/b/Conv' -> 'Conv'."""
    p = part.strip()
    if u := _UNNAMED.match(p):
        return u.group("type")
    if p.endswith((".weight", ".bias", ".running_mean", ".running_var")):
        return "weights"
    last = p.rsplit("/", 1)[-1]
    last = re.sub(r"_clone_\d+$", "", last)
    last = re.sub(r"_\d+$", "", last)
    return last or p


_ONNX_NODE = re.compile(r"\[ONNX Layer: ([^\]]*)\]")


def onnx_nodes(metadata: str) -> tuple[str, ...]:
    """ONNX nodes a layer came from: ``Metadata`` holds ``[ONNX Layer: /a/MatMul]`` entries
    (TRT 8.6+; TRT 10 separates them with ``\\x1f``)."""
    return tuple(m.strip() for m in _ONNX_NODE.findall(metadata) if m.strip())


def decode_layer(name: str) -> DecodedName:
    """Decode an engine layer name (profile, layer info, NVTX range)."""
    return _decode_layer(name, 0)


def _decode_layer(name: str, depth: int) -> DecodedName:
    base = _PROFILE.sub("", name)
    fields: list[tuple[str, str]] = []
    if base != name:
        fields.append(("optimisation profile", _PROFILE.search(name).group(1)))  # type: ignore[union-attr]
    if f := _FOREIGN.match(base):
        body = f.group("body")
        first, _, last = body.partition("...")
        fields += [("first node", first), ("last node", last or first)]
        return DecodedName(
            name,
            "myelin-region",
            "Myelin region (opaque ForeignNode)",
            tuple(x for x in (_op_label(first), "…", _op_label(last)) if x)
            if last
            else (_op_label(first),),
            tuple(fields),
        )
    if base.startswith("$$myelin$$"):
        scope = base[len("$$myelin$$") :].strip("/")
        return DecodedName(
            name,
            "myelin-tag",
            "Myelin node tag",
            (_op_label(scope),) if scope else (),
            (("scope", scope), *fields),
        )
    if "_mha" in base or base.startswith(("fmha", "mha_v2")):
        return DecodedName(
            name, "attention", "fused attention (MHA)", ("Attention",), tuple(fields)
        )
    if (my := _myelin(base)) is not None:
        return DecodedName(
            name,
            my.kind,
            "Myelin generated layer",
            my.ops,
            my.fields + tuple(fields),
            idioms=my.idioms,
        )
    if ml := _MYL_LAYER.match(base):
        fields += [("region", ml.group("r")), ("layer", ml.group("i"))]
        inner = (
            _decode_layer(ml.group("base"), depth + 1)
            if depth < 2
            else DecodedName(ml.group("base"), "plain", "layer")
        )
        return DecodedName(
            name,
            "myelin",
            "Myelin-compiled layer",
            inner.ops or (_op_label(ml.group("base")),),
            tuple(fields),
            idioms=inner.idioms,
        )
    if rf := _REFORMAT.match(base):
        fields += [
            ("tensor", f"{rf.group('dir').lower()} {rf.group('n')}"),
            ("of layer", rf.group("to")),
        ]
        return DecodedName(
            name, "reformat", "reformat (format/precision conversion)", ("Reformat",), tuple(fields)
        )
    if base.endswith(" copy") or "copied_" in base:
        return DecodedName(name, "reformat", "tensor copy", ("Copy",), tuple(fields))
    if re.fullmatch(r"\[trainStation\d+\]", base) or "[DevicetoShapeHostCopy]" in base:
        label = "shape sync (data-dependent shapes)"
        return DecodedName(name, "shape-sync", label, ("ShapeSync",), tuple(fields))
    if base.startswith("PWN(") or " + PWN(" in base or split_top(base, " + ")[1:]:
        parts = split_top(base, " + ")
        ops: list[str] = []
        pointwise = False
        for p in parts:
            if p.startswith("PWN("):
                pointwise = True
                ops.extend(_op_label(x) for x in pwn_leaves(p))
            else:
                ops.append(_op_label(p))
        ops = [o for o in ops if o != "weights"] or ops
        if len(parts) == 1 and pointwise:
            return DecodedName(
                name, "pointwise", "fused pointwise (PointWiseV2)", tuple(ops), tuple(fields)
            )
        return DecodedName(
            name, "fused-layer", f"{len(parts)} fused nodes", tuple(ops), tuple(fields)
        )
    if u := _UNNAMED.match(base):
        fields.append(("layer", u.group("n")))
        return DecodedName(
            name,
            "unnamed-layer",
            f"unnamed {u.group('type')} layer",
            (u.group("type"),),
            tuple(fields),
        )
    return DecodedName(name, "plain", "layer", (_op_label(base),), tuple(fields))


def decode_kernel(name: str) -> DecodedName:
    """Decode a kernel or tactic name (nsys kernel table, ``TacticName``)."""
    short = name.removeprefix("void ").strip()
    if (my := _myelin(short)) is not None:
        return my
    if "_mha" in short or short.startswith(("fmha", "mha_v2", "kernel_mha")) or "fmha" in short:
        prec = next(
            (
                _TYPE_TOKEN[t]
                for t in re.findall(r"(?:^|_)(fp16|bf16|e4m3|fp32|int8)(?=_|$)", short)
                if t in _TYPE_TOKEN
            ),
            None,
        )
        return DecodedName(
            name, "attention", "fused attention (MHA)", ("Attention",), (), prec, True
        )
    if "_xmma_" in short or short.startswith("xmma_"):
        return _xmma(short)
    if "cutlass" in short:
        return _cutlass(short)
    if nv := _NVJET.match(short):
        return _nvjet(name, nv)
    if cd := _CUDNN.match(short):
        return _cudnn(name, cd)
    if "generatedNativePointwise" in short or short.startswith("pointWise"):
        return DecodedName(name, "pointwise", "generated pointwise kernel", ("Pointwise",))
    if "genericReformat" in short or "Reformat" in short or "reformat" in short:
        return DecodedName(name, "reformat", "reformat kernel", ("Reformat",))
    tc = True if is_tensor_core_kernel(short) else None
    return DecodedName(name, "plain", "kernel", (), (), None, tc)


def decode(name: str) -> DecodedName:
    """Kernel names first (they are more specific), else a layer name."""
    k = decode_kernel(name)
    return k if k.kind != "plain" else decode_layer(name)
