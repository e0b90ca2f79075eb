"""Efficiency against the hardware: FLOPs and bytes per operator and kernel, roofline, MFU.

1. Every host operator's recorded inputs go through the work models (analysis/efficiency/work.py),
   once per distinct (name, shapes, dtypes, scalars) record.
2. Work is counted once: an operator counts when it carries work (FLOPs or bytes) and no
   descendant carries work of its priority or higher (matrix > norm/softmax > the rest):
   ``aten::linear`` -> ``aten::addmm`` counts the addmm.
3. Device ops are attributed to the closest counted operator at or above the operator that
   launched them (operator -> runtime call -> kernel links); an operator's work is split
   over its device ops in proportion to their durations.
4. Per kernel/operator: achieved FLOP/s and bytes/s over device time, % of the device's peak
   for the dtype (matrix peak for matmul/conv/attention, vector FP32 otherwise), roofline
   time = max(FLOPs / peak FLOP/s, bytes / peak bandwidth), % of roofline = roofline time /
   device time, bound = the larger of the two terms.
5. MFU per step = model FLOPs of the device ops that start in the step / step duration /
   peak of the dominant matrix dtype; HFU counts recomputed (activation checkpointing) work
   too. On CPU-only traces operators are timed by their host duration and MFU needs an
   explicit peak (``--peak-tflops``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.analysis.efficiency.work import MATRIX_FAMILIES, Work, decode, model_op
from stepscope.analysis.events.links import gather
from stepscope.analysis.events.optree import OpTree
from stepscope.analysis.events.steps import Steps
from stepscope.classify import names
from stepscope.classify.gpu_peaks import DTYPES, GpuPeak, match_peak
from stepscope.grouping import unique_inverse
from stepscope.model.trace import DEV_KERNEL, Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

_PRIORITY = {"matmul": 3, "conv": 3, "attention": 3, "norm": 2, "softmax": 2}
POINTS = 200  # kernels/operators kept for the roofline chart (by device time)
ABOVE_TOLERANCE = 1.01  # a point within 1 % of its roof is on it (rounded peaks, timing)
# host ops that only ever appear in forward passes: found under an autograd backward node,
# they (and what they call) are recomputation (activation checkpointing)
_FORWARD_ONLY = frozenset({
    "aten::linear", "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::layer_norm",
    "aten::group_norm", "aten::batch_norm", "aten::scaled_dot_product_attention",
    "aten::embedding", "aten::rms_norm",
})


@dataclass(frozen=True)
class Overrides:
    """User-given peaks (``--peak-tflops`` / ``--peak-gbps``): replace every dtype's peak."""

    tflops: float | None = None
    gbps: float | None = None


@dataclass(frozen=True)
class DevicePeak:
    device: int  # -1: the host (CPU-only traces with an override)
    name: str
    match: str | None  # table row ("H100 SXM"), "override", or None when unknown
    how: str  # name | signature | override | unknown
    source: str | None  # datasheet the figures come from
    tflops: dict[str, float | None]  # per dtype key (fp64 ... fp4)
    gbps: float | None
    note: str | None = None

    @property
    def known(self) -> bool:
        return self.gbps is not None or any(v is not None for v in self.tflops.values())

    def peak_flops(self, dtype: str, matrix: bool) -> float | None:
        """FLOP/s for work of this dtype: matrix peak for matrix families, else vector FP32."""
        if not matrix:
            key = "fp64" if dtype == "fp64" else "fp32"
        else:
            key = dtype if dtype in DTYPES else "fp32"
        value = self.tflops.get(key)
        if value is None and key == "tf32":
            value = self.tflops.get("fp32")
        return None if value is None else value * 1e12

    @property
    def peak_bytes(self) -> float | None:
        return None if self.gbps is None else self.gbps * 1e9


@dataclass(frozen=True)
class WorkRow:
    """Aggregated work of one operator or kernel name."""

    name: str
    family: str  # dominant family by time
    dtype: str  # dtype key used for the peak (fp32 matmuls on Tensor Cores: tf32)
    calls: int
    time_ns: float
    flops: float
    bytes: float
    compute_ns: float  # FLOPs / peak FLOP/s (0 without a peak)
    memory_ns: float  # bytes / peak bandwidth (0 without a peak)
    has_peak: bool
    peak_flops_in_time: float = 0.0  # Σ peak FLOP/s × time: the most FLOPs the roof allows

    @property
    def tflops_s(self) -> float:
        return self.flops / self.time_ns / 1e3 if self.time_ns > 0 else 0.0

    @property
    def gbps(self) -> float:
        return self.bytes / self.time_ns if self.time_ns > 0 else 0.0

    @property
    def intensity(self) -> float | None:
        return self.flops / self.bytes if self.bytes > 0 else None

    def _pct(self, ns: float) -> float | None:
        return 100.0 * ns / self.time_ns if self.has_peak and self.time_ns > 0 else None

    @property
    def pct_peak_flops(self) -> float | None:
        return self._pct(self.compute_ns)

    @property
    def pct_peak_bw(self) -> float | None:
        return self._pct(self.memory_ns)

    @property
    def pct_roofline(self) -> float | None:
        return self._pct(max(self.compute_ns, self.memory_ns))

    @property
    def above_roof(self) -> str | None:
        """Why the point sits above its roof (more FLOP/s than the peak of its dtype allows),
        or None. A measured rate cannot beat the hardware, so one of the premises is wrong:
        the dtype (FP32 matrix work that ran on reduced-precision units the kernel name does
        not reveal), the FLOP count (Winograd/FFT convolutions multiply less than the
        direct formula counts), or the peak (the device matched to the wrong part)."""
        if self.peak_flops_in_time <= 0 or self.flops <= self.peak_flops_in_time * ABOVE_TOLERANCE:
            return None
        times = self.flops / self.peak_flops_in_time
        if self.family in MATRIX_FAMILIES and self.dtype == "fp32":
            return (f"dtype: {times:.1f}x the FP32 peak; the kernels ran in a reduced "
                    "precision (TF32/BF16) that the recorded dtype does not show")
        if self.family == "conv":
            return (f"FLOP count: {times:.1f}x the {self.dtype} peak; Winograd/FFT convolutions "
                    "multiply less than the direct count")
        return (f"peak: {times:.1f}x the {self.dtype} peak of the matched device; check the "
                "device's peak figures (matched part, clocks) or give --peak-tflops")

    @property
    def bound(self) -> str | None:
        if not self.has_peak or (self.compute_ns <= 0 and self.memory_ns <= 0):
            return None
        return "compute" if self.compute_ns >= self.memory_ns else "memory"


@dataclass(frozen=True)
class StepMfu:
    step: str
    device: int
    duration_ns: int
    model_flops: float
    hardware_flops: float
    peak_tflops: float | None

    def _pct(self, flops: float) -> float | None:
        if not self.peak_tflops or self.duration_ns <= 0:
            return None
        return 100.0 * flops / (self.duration_ns * 1e-9) / (self.peak_tflops * 1e12)

    @property
    def mfu_pct(self) -> float | None:
        return self._pct(self.model_flops)

    @property
    def hfu_pct(self) -> float | None:
        return self._pct(self.hardware_flops)


@dataclass(frozen=True)
class NoModel:
    name: str
    calls: int
    time_ns: float


@dataclass(frozen=True)
class MatmulShape:
    """A matmul problem size and its device time (for the alignment advice)."""

    op: str
    m: int
    n: int
    k: int
    dtype: str
    calls: int
    time_ns: float
    matrix_cores: bool = True  # most of its time ran in Tensor Core / matrix-core kernels


@dataclass(frozen=True)
class Efficiency:
    devices: tuple[DevicePeak, ...]
    mfu_dtype: str  # dtype of the peak MFU divides by (dominant matrix dtype by FLOPs)
    steps: tuple[StepMfu, ...]
    operators: tuple[WorkRow, ...]  # by device (or host) time, descending
    kernels: tuple[WorkRow, ...]
    no_model: tuple[NoModel, ...]  # launching operators of device time no model covers
    total_flops: float
    total_bytes: float
    recomputed_flops: float
    time_ns: float  # device time (host time on CPU traces) of all device ops / operators
    modelled_ns: float  # of which attributed to a work model
    time_by_family: dict[str, float]  # ns per family (+ "no model")
    fp32_matmul_ns: float  # matrix-family time in FP32 off Tensor Cores
    matmul_shapes: tuple[MatmulShape, ...]
    on_gpu: bool
    capped: int = 0  # operator calls whose modelled bytes were capped at the peak bandwidth
    flops_capped: int = 0  # operator calls whose model FLOPs imply more than the peak

    def mfu(self, device: int | None = None) -> tuple[float | None, float | None]:
        """(MFU %, HFU %) over all steps, for one device (default: the first with a peak)."""
        rows = [s for s in self.steps if device is None or s.device == device]
        if device is None and rows:
            rows = [s for s in rows if s.device == rows[0].device]
        if not rows or rows[0].peak_tflops is None:
            return None, None
        total = StepMfu("all", rows[0].device, sum(s.duration_ns for s in rows),
                        sum(s.model_flops for s in rows), sum(s.hardware_flops for s in rows),
                        rows[0].peak_tflops)
        return total.mfu_pct, total.hfu_pct


# ---- device peaks ------------------------------------------------------------------------


def _from_row(device: int, name: str, row: GpuPeak, how: str, note: str | None) -> DevicePeak:
    return DevicePeak(device, name, row.key, how, row.source, row.peaks(), row.gbps, note)


def device_peaks(trace: Trace, devices: list[int], overrides: Overrides) -> list[DevicePeak]:
    props = {p.id: p for p in trace.meta.devices}
    out = []
    for d in devices:
        p = props.get(d)
        note = None
        if p is None and d >= 0 and len({(q.name, q.num_sms) for q in props.values()}) == 1:
            p = next(iter(props.values()))  # one GPU model in the box: ids may be renumbered
            note = f"no deviceProperties for device {d}; assumed the trace's only GPU model"
        name = p.name if p is not None else ("host" if d < 0 else "")
        match = None
        if p is not None:
            match = match_peak(p.name, total_memory=p.total_memory,
                               compute=(p.compute_major, p.compute_minor), num_sms=p.num_sms)
        if match is not None:
            peak = _from_row(d, name, match.peak, match.how, note)
        else:
            why = ("no deviceProperties in the trace" if p is None
                   else "its deviceProperties name no model" if not p.name.strip()
                   else f"{p.name} is not in the peak table")
            peak = DevicePeak(d, name, None, "unknown", None, dict.fromkeys(DTYPES), None,
                              f"{why}; pass --peak-tflops/--peak-gbps")
        if overrides.tflops is not None or overrides.gbps is not None:
            tflops: dict[str, float | None] = (
                dict.fromkeys(DTYPES, overrides.tflops) if overrides.tflops is not None
                else peak.tflops)
            peak = DevicePeak(d, name, "override" if peak.match is None else peak.match,
                              "override", "command line", tflops,
                              overrides.gbps if overrides.gbps is not None else peak.gbps,
                              None)
        out.append(peak)
    return out


# ---- the analysis ------------------------------------------------------------------------


def _inherit(tree: OpTree, flag: B) -> B:
    """flag[i] | any ancestor's flag (top-down, one vectorised pass per depth level)."""
    out = flag.copy()
    parent, depth = tree.parent, tree.depth
    for level in range(1, int(depth.max()) + 1 if len(depth) else 0):
        sel = np.flatnonzero((depth == level) & (parent >= 0))
        out[sel] |= out[parent[sel]]
    result: B = out
    return result


def _nearest(tree: OpTree, start: I64, target: B) -> I64:
    """For each start node, the closest node at or above it with ``target`` set (or -1)."""
    res = np.full(len(start), -1, dtype=np.int64)
    cur = start.copy()
    parent = tree.effective_parent
    for _ in range(int(tree.depth.max()) + 2 if len(tree.depth) else 0):
        ok = cur >= 0
        if not ok.any():
            break
        hit = ok & (res < 0)
        hit[hit] = target[cur[hit]]
        res[hit] = cur[hit]
        cur = np.where(ok & (res < 0), gather(parent, cur, -1), -1)
    return res


def _model_ops(trace: Trace, ops: I64) -> tuple[list[Work | None], I64]:
    """Work of each distinct record among ``ops``; and each op's index into that list."""
    host = trace.host
    if len(ops) == 0:
        return [], np.zeros(0, dtype=np.int64)
    cols = (host.name[ops], host.input_dims[ops], host.input_types[ops],
            host.concrete_inputs[ops], host.input_strides[ops])
    order = np.lexsort(cols[::-1])  # distinct rows without np.unique(axis=0)'s slow sort
    key = [col[order] for col in cols]  # column by column: a stacked (n, 5) copy cost 2x
    new = np.zeros(len(ops), dtype=bool)
    new[0] = True
    for col in key:
        new[1:] |= col[1:] != col[:-1]
    inverse = np.empty(len(ops), dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    aten = names.mask(trace, names.is_aten_op)
    rows = zip(*(col[new].tolist() for col in key), strict=True)
    works = [model_op(decode(*(trace.name(int(i)) for i in row))) if aten[row[0]] else None
             for row in rows]
    return works, inverse


def _rows(names_: I64, strings: tuple[str, ...], calls_of: I64, time: F64, flops: F64,
          nbytes: F64, compute: F64, memory: F64, family: tuple[list[str], I64],
          dtype: tuple[list[str], I64],
          has_peak: B, peak_in_time: F64, limit: int | None) -> tuple[WorkRow, ...]:
    """Group per-item arrays by name id; family/dtype of each group = its longest item's."""
    if len(names_) == 0:
        return ()
    ukey, inv = unique_inverse(names_)
    n = len(ukey)

    def s(v: F64) -> F64:
        out: F64 = np.bincount(inv, weights=v, minlength=n).astype(np.float64)
        return out

    t, f, b, c, m, pk = s(time), s(flops), s(nbytes), s(compute), s(memory), s(peak_in_time)
    calls = np.bincount(inv, weights=calls_of.astype(np.float64), minlength=n)
    peak_any = np.bincount(inv, weights=has_peak.astype(np.float64), minlength=n) > 0
    order = np.lexsort((-time, inv))  # per group, its longest item first
    first = order[np.searchsorted(inv[order], np.arange(n))]
    fam_names, fam_idx = family
    key_names, key_idx = dtype

    def label(labels: list[str], idx: I64, g: int) -> str:
        i = int(idx[int(first[g])])
        return labels[i] if i >= 0 else ""

    rows = [WorkRow(strings[int(ukey[g])], label(fam_names, fam_idx, g),
                    label(key_names, key_idx, g),
                    int(calls[g]), float(t[g]), float(f[g]), float(b[g]), float(c[g]),
                    float(m[g]), bool(peak_any[g]), float(pk[g])) for g in range(n)]
    rows.sort(key=lambda r: (-r.time_ns, r.name))
    return tuple(rows if limit is None else rows[:limit])


def _combos(device: npt.NDArray[np.int64], key: npt.NDArray[np.int64],
            matrix: npt.NDArray[np.bool_]) -> list[tuple[int, int, bool]]:
    """The distinct (device, dtype key, matrix) triples, packed into one int64 per item
    (``np.unique(axis=0)`` sorts rows as structured values, ~10x slower on millions)."""
    if len(device) == 0:
        return []
    d0, k0 = int(device.min()), int(key.min())
    span = int(key.max()) - k0 + 1
    packed = ((device.astype(np.int64) - d0) * span + (key - k0)) * 2 + matrix
    return [((c // 2) // span + d0, (c // 2) % span + k0, bool(c % 2))
            for c in np.unique(packed).tolist()]


def efficiency(trace: Trace, tree: OpTree, steps: Steps,
               overrides: Overrides | None = None) -> Efficiency | None:
    """The efficiency analysis, or None when the trace records no operator inputs."""
    overrides = overrides or Overrides()
    host, dev = trace.host, trace.device
    times = tree.times
    ops = np.flatnonzero(times.is_operator & ((host.input_dims >= 0) | (host.input_types >= 0)))
    if len(ops) == 0:
        return None
    works, which = _model_ops(trace, ops)
    fam_names = sorted({w.family for w in works if w is not None})
    fam_id = {f: i for i, f in enumerate(fam_names)}
    dtype_names = sorted({w.dtype for w in works if w is not None})
    dtype_id = {d: i for i, d in enumerate(dtype_names)}
    u_flops = np.array([w.flops if w else 0.0 for w in works], dtype=np.float64)
    u_bytes = np.array([w.bytes if w else 0.0 for w in works], dtype=np.float64)
    u_fam = np.array([fam_id[w.family] if w else -1 for w in works], dtype=np.int64)
    u_dtype = np.array([dtype_id[w.dtype] if w else -1 for w in works], dtype=np.int64)

    n = len(host)
    op_flops = np.zeros(n)
    op_bytes = np.zeros(n)
    op_fam = np.full(n, -1, dtype=np.int64)
    op_dtype = np.full(n, -1, dtype=np.int64)
    op_flops[ops], op_bytes[ops] = u_flops[which], u_bytes[which]
    op_fam[ops], op_dtype[ops] = u_fam[which], u_dtype[which]
    carries = (op_fam >= 0) & ((op_flops > 0) | (op_bytes > 0))
    # an operator is left out when a descendant carries work of its priority or higher:
    # linear -> addmm counts the addmm once, while the copy_ inside an addmm does not hide it
    prio_of = np.array([_PRIORITY.get(f, 1) for f in fam_names] + [0], dtype=np.int64)
    prio = np.where(op_fam >= 0, prio_of[op_fam], 0)
    counted = carries.copy()
    for level in (1, 2, 3):
        ge = (carries & (prio >= level)).astype(np.float64)
        below = tree.roll_up(ge) - ge
        counted &= ~((prio == level) & (below > 0))

    # recomputation: forward-only ops under an autograd backward node
    backward = names.mask(trace, names.is_autograd_node)[host.name]
    forward = names.mask_in(trace, _FORWARD_ONLY)[host.name]
    recomputed = counted & _inherit(tree, forward & _inherit(tree, backward))

    on_gpu = bool(len(dev) and (dev.dur > 0).any())
    if on_gpu:
        item_op = _nearest(tree, tree.device_owner, counted)
        item_time = dev.dur.astype(np.float64)
        op_time = np.bincount(item_op[item_op >= 0], weights=item_time[item_op >= 0],
                              minlength=n).astype(np.float64)
        share = np.where(item_op >= 0, item_time / np.maximum(gather(op_time, item_op, 1.0),
                                                              1.0), 0.0)
        item_flops = gather(op_flops, item_op, 0.0) * share
        item_bytes = gather(op_bytes, item_op, 0.0) * share
        item_device = dev.device.astype(np.int64)
        tc = names.mask(trace, names.is_tensor_core_kernel)[dev.name]
        tc_time = np.bincount(item_op[item_op >= 0], weights=(item_time * tc)[item_op >= 0],
                              minlength=n)
        op_tc = tc_time > 0.5 * op_time
        tf32 = tc & names.mask(trace, names.says_tf32)[dev.name]
        tf32_time = np.bincount(item_op[item_op >= 0],
                                weights=(item_time * tf32)[item_op >= 0], minlength=n)
        op_tf32_named = tf32_time > 0.5 * op_time
    else:
        item_op = np.flatnonzero(counted).astype(np.int64)
        item_time = times.host_total[item_op]
        item_flops, item_bytes = op_flops[item_op], op_bytes[item_op]
        item_device = np.full(len(item_op), -1, dtype=np.int64)
        op_tc = np.zeros(n, dtype=bool)
        op_tf32_named = op_tc
        op_time = np.bincount(item_op, weights=item_time, minlength=n).astype(np.float64)
    has_op = item_op >= 0

    # dtype key per op for the peak: the kernels actually run decide (docs/metrics.md).
    # float32 matrix work whose kernels run on matrix cores ran as TF32 on NVIDIA (no FP32
    # MMA exists there) or where the kernel name says tf32/xf32 (AMD XF32); on CUDA cores
    # (sm80_xmma_*_ffma_*, *sgemm*) and on AMD's FP32 MFMA it is FP32.
    is_matrix = np.zeros(n, dtype=bool)
    for f in MATRIX_FAMILIES & set(fam_id):
        is_matrix |= op_fam == fam_id[f]
    key_names = [*dtype_names, "tf32"]
    op_key = op_dtype.copy()
    if "fp32" in dtype_id:
        op_tf32 = op_tc if trace.meta.vendor == "nvidia" else op_tf32_named
        op_key[is_matrix & op_tf32 & (op_dtype == dtype_id["fp32"])] = len(dtype_names)

    # peaks per device and per (device, dtype key, matrix)
    device_ids: list[int] = []
    if on_gpu:
        device_ids = sorted(int(d) for d in np.unique(dev.device[dev.kind == DEV_KERNEL]))
    elif overrides.tflops is not None or overrides.gbps is not None:
        device_ids = [-1]
    peaks = device_peaks(trace, device_ids, overrides) if device_ids else []
    by_dev = {p.device: p for p in peaks}
    item_key = gather(op_key, item_op, -1)
    item_matrix = gather(is_matrix, item_op, False)
    peak_f = np.zeros(len(item_op))
    peak_b = np.zeros(len(item_op))
    for d, k, mx in _combos(item_device[has_op], item_key[has_op], item_matrix[has_op]):
        p = by_dev.get(d)
        if p is None or k < 0:
            continue
        sel = has_op & (item_device == d) & (item_key == k) & (item_matrix == bool(mx))
        pf = p.peak_flops(key_names[k], bool(mx))
        peak_f[sel] = pf or 0.0
        peak_b[sel] = p.peak_bytes or 0.0
    # Modelled bytes are DRAM traffic assuming nothing stays in cache. More than the peak
    # bandwidth allows in the measured time means inputs came from L2 (written just before)
    # or were broadcast (stride 0, not recorded before PyTorch 2.1): cap there, and count it.
    limit = peak_b * item_time * 1e-9
    over = has_op & (peak_b > 0) & (item_bytes > limit)
    item_bytes = np.where(over, limit, item_bytes)
    capped = len(np.unique(item_op[over]))
    compute_ns = np.where(peak_f > 0, item_flops / np.maximum(peak_f, 1.0) * 1e9, 0.0)
    # Winograd/FFT convolutions multiply less than the direct formula counts: their model
    # FLOPs can exceed what the peak allows in the measured time. Cap the % of peak, count it.
    over_f = has_op & (compute_ns > item_time)
    compute_ns = np.where(over_f, item_time, compute_ns)
    flops_capped = len(np.unique(item_op[over_f]))
    memory_ns = np.where(peak_b > 0, item_bytes / np.maximum(peak_b, 1.0) * 1e9, 0.0)
    item_has_peak = (peak_f > 0) | (peak_b > 0)

    item_fam = gather(op_fam, item_op, -1)
    sel = np.flatnonzero(has_op)
    op_calls = np.zeros(len(sel), dtype=np.int64)
    if on_gpu:  # one call per operator: count it on its longest device op
        first = _first_per_group(item_op[sel], item_time[sel])
        op_calls[first] = 1
    else:
        op_calls[:] = 1
    args = (item_time[sel], item_flops[sel], item_bytes[sel], compute_ns[sel], memory_ns[sel],
            (fam_names, item_fam[sel]), (key_names, item_key[sel]), item_has_peak[sel],
            # items without a peak count as on their roof: only peaked ones can be above
            np.where(peak_f > 0, peak_f * item_time * 1e-9, item_flops)[sel])
    operators = _rows(host.name[item_op[sel]].astype(np.int64), trace.strings, op_calls, *args,
                      limit=POINTS)
    kernels = (_rows(dev.name[sel].astype(np.int64), trace.strings,
                     np.ones(len(sel), dtype=np.int64), *args, limit=POINTS) if on_gpu else ())

    # device time no model covers, by the operator that launched it
    no_model: tuple[NoModel, ...] = ()
    if on_gpu:
        miss = np.flatnonzero(~has_op)
        owner = tree.device_owner[miss]
        label = np.where(owner >= 0, gather(host.name, owner, -1), -1).astype(np.int64)
        if len(miss):
            ul, inv = np.unique(label, return_inverse=True)
            inv = inv.reshape(-1)
            t = np.bincount(inv, weights=item_time[miss], minlength=len(ul))
            c = np.bincount(inv, minlength=len(ul))
            no_model = tuple(sorted(
                (NoModel(trace.name(int(ul[g])) or "(no launching operator)", int(c[g]),
                         float(t[g])) for g in range(len(ul))),
                key=lambda r: (-r.time_ns, r.name))[:POINTS])
    else:
        leaf = times.is_operator & (op_fam < 0) & (host.input_dims >= 0)
        leaf &= tree.roll_up(counted.astype(np.float64)) <= 0
        idx = np.flatnonzero(leaf & (times.host_self > 0))
        if len(idx):
            ul, inv = np.unique(host.name[idx], return_inverse=True)
            inv = inv.reshape(-1)
            t = np.bincount(inv, weights=times.host_self[idx], minlength=len(ul))
            c = np.bincount(inv, minlength=len(ul))
            no_model = tuple(sorted((NoModel(trace.name(int(ul[g])), int(c[g]), float(t[g]))
                                     for g in range(len(ul))),
                                    key=lambda r: (-r.time_ns, r.name))[:POINTS])

    # time by family
    per_fam = np.bincount(item_fam + 1, weights=item_time, minlength=len(fam_names) + 1)
    time_by_family = {f: float(per_fam[i + 1]) for i, f in enumerate(fam_names) if per_fam[i + 1]}
    if per_fam[0]:
        time_by_family["no model"] = float(per_fam[0])
    if not on_gpu:
        time_by_family["no model"] = sum(r.time_ns for r in no_model)
    fp32_mm = (has_op & item_matrix & (item_key == dtype_id.get("fp32", -2))
               & ~gather(op_tc, item_op, False))  # AMD runs FP32 on MFMA: not "off"
    fp32_matmul_ns = float(item_time[fp32_mm].sum())

    # MFU: dominant matrix dtype by FLOPs; FLOPs of the device ops that start in each step
    mat = has_op & item_matrix & (item_key >= 0)
    mfu_key = "fp32"
    if mat.any():
        per_key = np.bincount(item_key[mat], weights=item_flops[mat], minlength=len(key_names))
        mfu_key = key_names[int(np.argmax(per_key))]
    # MFU from the host records (robust to missing operator -> kernel links): each counted
    # operator belongs to the step its host range starts in and to the device of its
    # longest device op (the busiest device when none is linked)
    cidx = np.flatnonzero(counted)
    op_dev = np.full(n, -1, dtype=np.int64)
    if on_gpu:
        # by the ids present, not indexed by id: a (hostile) id of 2^31 must not size an array
        ids, inv = np.unique(np.maximum(dev.device, 0), return_inverse=True)
        busy = np.bincount(inv, weights=dev.dur.astype(np.float64))
        op_dev[:] = int(ids[int(np.argmax(busy))])
        first = _first_per_group(item_op[sel], item_time[sel])
        op_dev[item_op[sel][first]] = item_device[sel][first]
    step_rows = []
    for d in device_ids:
        p = by_dev[d]
        peak = p.peak_flops(mfu_key, True)
        on_d = cidx[op_dev[cidx] == d]
        on_d = on_d[np.argsort(host.ts[on_d], kind="stable")]
        ts = host.ts[on_d]
        hw_cum = np.concatenate(([0.0], np.cumsum(op_flops[on_d])))
        model_cum = np.concatenate(([0.0], np.cumsum(op_flops[on_d] * ~recomputed[on_d])))
        lo = np.searchsorted(ts, [s.host_start for s in steps.steps], side="left")
        hi = np.searchsorted(ts, [s.host_end for s in steps.steps], side="left")
        for s, a, b in zip(steps.steps, lo.tolist(), hi.tolist(), strict=True):
            step_rows.append(StepMfu(s.name, d, s.duration, float(model_cum[b] - model_cum[a]),
                                     float(hw_cum[b] - hw_cum[a]),
                                     None if peak is None else peak / 1e12))

    shapes = _matmul_shapes(trace, ops, works, which, counted, op_time,
                            op_time * op_tc if on_gpu else op_time)
    return Efficiency(
        devices=tuple(peaks), mfu_dtype=mfu_key, steps=tuple(step_rows),
        operators=operators, kernels=kernels, no_model=no_model,
        total_flops=float(op_flops[cidx].sum()), total_bytes=float(op_bytes[cidx].sum()),
        recomputed_flops=float(op_flops[cidx][recomputed[cidx]].sum()),
        time_ns=float(item_time.sum()) + (0.0 if on_gpu else time_by_family["no model"]),
        modelled_ns=float(item_time[has_op].sum()), time_by_family=time_by_family,
        fp32_matmul_ns=fp32_matmul_ns, matmul_shapes=shapes, on_gpu=on_gpu, capped=capped,
        flops_capped=flops_capped,
    )


def _first_per_group(group: I64, time: F64) -> I64:
    """Index (into the arrays) of the longest item of each group."""
    if len(group) == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((-time, group))
    g = group[order]
    starts = np.flatnonzero(np.concatenate(([True], g[1:] != g[:-1])))
    out: I64 = order[starts].astype(np.int64)
    return out


def _matmul_shapes(trace: Trace, ops: I64, works: list[Work | None], which: I64,
                   counted: B, op_time: F64, tc_time: F64) -> tuple[MatmulShape, ...]:
    """Counted matmuls grouped by (op, M, N, K, dtype), by time."""
    sel = ops[counted[ops]]
    w_of = which[counted[ops]]
    calls = np.bincount(w_of, minlength=len(works))
    time = np.bincount(w_of, weights=op_time[sel], minlength=len(works))
    tc = np.bincount(w_of, weights=tc_time[sel], minlength=len(works))
    name_of = np.zeros(len(works), dtype=np.int64)
    name_of[w_of] = trace.host.name[sel]
    acc: dict[tuple[str, int, int, int, str], list[float]] = {}
    for u in np.flatnonzero(calls).tolist():  # once per distinct record
        w = works[u]
        if w is None or w.mnk is None:
            continue
        entry = acc.setdefault((trace.name(int(name_of[u])), *w.mnk, w.dtype), [0, 0.0, 0.0])
        entry[0] += int(calls[u])
        entry[1] += float(time[u])
        entry[2] += float(tc[u])
    rows = [MatmulShape(k[0], k[1], k[2], k[3], k[4], int(v[0]), v[1], v[2] > 0.5 * v[1])
            for k, v in acc.items()]
    rows.sort(key=lambda r: (-r.time_ns, r.op))
    return tuple(rows[:POINTS])
