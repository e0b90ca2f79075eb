"""Map GPU kernels to TensorRT layers through NVTX: a kernel belongs to the innermost NVTX
range open on the launching thread when its launch call started (nsys's NVTX projection).

Per-layer GPU time per inference = summed kernel durations of the layer / number of times
the layer's range occurs. Kernels launched outside any range (e.g. replayed CUDA graphs,
which carry no per-layer NVTX) are reported as unmapped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from stepscope.model.tensorrt import LayerKernelTrace

I64 = npt.NDArray[np.int64]
MAX_DEPTH = 64  # walk-back steps over finished sibling ranges (nesting depth bound)


@dataclass(frozen=True)
class KernelMapping:
    per_layer_ms: dict[str, float]  # per inference
    kernels: dict[str, tuple[tuple[str, float, int], ...]]  # layer -> (kernel, ms/inference, calls)
    occurrences: dict[str, int]  # layer -> ranges seen (inferences)
    mapped_kernels: int
    unmapped_kernels: int
    unmapped_ms: float  # total, not per inference


def innermost_range(start: I64, end: I64, tid: I64, q_ts: I64, q_tid: I64) -> I64:
    """Index of the innermost range on the same thread containing each query time (-1: none)."""
    out = np.full(len(q_ts), -1, dtype=np.int64)
    if len(start) == 0 or len(q_ts) == 0:
        return out
    for t in np.unique(q_tid).tolist():
        rsel = np.flatnonzero(tid == t)
        qsel = np.flatnonzero(q_tid == t)
        if len(rsel) == 0:
            continue
        rsel = rsel[np.argsort(start[rsel], kind="stable")]
        rs, re_ = start[rsel], end[rsel]
        ts = q_ts[qsel]
        k = np.searchsorted(rs, ts, side="right") - 1
        for _ in range(MAX_DEPTH):
            bad = (k >= 0) & (re_[np.maximum(k, 0)] < ts)
            if not bad.any():
                break
            k = np.where(bad, k - 1, k)
        ok = (k >= 0) & (re_[np.maximum(k, 0)] >= ts)
        out[qsel[ok]] = rsel[k[ok]]
    return out


def layer_gpu_times(tr: LayerKernelTrace) -> KernelMapping:
    order = np.argsort(tr.launch_corr, kind="stable")
    lc = tr.launch_corr[order]
    n_k = len(tr.kernel_corr)
    if len(lc):
        pos = np.minimum(np.searchsorted(lc, tr.kernel_corr), len(lc) - 1)
        found = lc[pos] == tr.kernel_corr
        src = order[pos]
        q_ts = np.where(found, tr.launch_start[src], -1).astype(np.int64)
        q_tid = np.where(found, tr.launch_tid[src], -1).astype(np.int64)
    else:  # no runtime calls: nothing can be attributed
        found = np.zeros(n_k, dtype=bool)
        q_ts = np.full(n_k, -1, dtype=np.int64)
        q_tid = np.full(n_k, -1, dtype=np.int64)
    rng = innermost_range(tr.range_start, tr.range_end, tr.range_tid, q_ts, q_tid)
    rng[~found] = -1
    dur = (tr.kernel_end - tr.kernel_start).astype(np.float64)
    n_names = len(tr.range_names)
    occ = np.bincount(tr.range_name, minlength=n_names)
    occurrences = {tr.range_names[i]: int(c) for i, c in enumerate(occ.tolist()) if c}
    mapped = rng >= 0
    per_layer: dict[str, float] = {}
    kernels: dict[str, dict[str, tuple[float, int]]] = {}
    if mapped.any():
        n_k = max(len(tr.kernel_names), 1)
        lay = tr.range_name[rng[mapped]]
        key = lay * n_k + tr.kernel_name[mapped]  # (layer, kernel) pairs as one int
        uk, inv = np.unique(key, return_inverse=True)
        tot = np.bincount(inv, weights=dur[mapped])
        cnt = np.bincount(inv)
        per_inf = tot / np.maximum(occ[uk // n_k], 1) / 1e6  # ms per inference
        for k_, ms, c in zip(uk.tolist(), per_inf.tolist(), cnt.tolist(), strict=True):
            layer, kernel = tr.range_names[k_ // n_k], tr.kernel_names[k_ % n_k]
            per_layer[layer] = per_layer.get(layer, 0.0) + ms
            kernels.setdefault(layer, {})[kernel] = (ms, int(c))
    return KernelMapping(
        per_layer_ms=per_layer,
        kernels={
            k: tuple(sorted(((kn, ms, c) for kn, (ms, c) in v.items()), key=lambda x: -x[1]))
            for k, v in kernels.items()
        },
        occurrences=occurrences,
        mapped_kernels=int(mapped.sum()),
        unmapped_kernels=int((~mapped).sum()),
        unmapped_ms=float(dur[~mapped].sum()) / 1e6,
    )
