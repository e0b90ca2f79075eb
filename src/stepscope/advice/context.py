"""Shared, cached helpers for the rules: per-step scaling, the main GPU's busy/idle time
inside the steps, Python source lines from ``with_stack`` call stacks, and the premises of
the run (``Premises``: vendor, matmul dtypes, compiled?, CUDA/HIP graphs?) every rule whose
fix depends on them reads from one place."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from stepscope.advice.finding import Finding
from stepscope.analysis.events import intervals as iv
from stepscope.analysis.events.links import gather
from stepscope.analysis.events.optree import NodeTimes
from stepscope.analysis.events.steps import step_index
from stepscope.analysis.events.warmup import FIRST_CALL_MIN_NS, first_calls, first_launches
from stepscope.analysis.suite import Analyses
from stepscope.classify import names
from stepscope.model.trace import DEV_KERNEL, DEV_MEMCPY, HOST_OP, HOST_PYTHON, DeviceProperties
from stepscope.shortnames import short_name
from stepscope.units import format_us

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]
B = npt.NDArray[np.bool_]

_FRAME = re.compile(r"^\s*(?P<path>.+?\.py)\((?P<line>\d+)\): (?P<func>.*)$")
_LIBRARY = ("site-packages", "dist-packages", "/lib/python", "<frozen", "<built-in")


def is_user_frame(frame: str) -> bool:
    """A ``file.py(123): function`` frame outside torch, the standard library and packages."""
    m = _FRAME.match(frame)
    if not m:
        return False
    path = m.group("path").replace("\\", "/")
    if any(tok in path for tok in _LIBRARY):
        return False
    return not (path.startswith(("torch/", "torch\\")) or "/torch/" in path)


def first_user_frame(stack: str) -> str | None:
    """Innermost user frame of a Kineto "Call stack" (frames innermost first, ';'-separated)."""
    for frame in stack.split(";"):
        if is_user_frame(frame):
            return frame.strip()
    return None


MATRIX_FAMILIES = ("matmul", "conv", "attention")
LOW_PRECISION = frozenset({"bf16", "fp16", "fp8", "fp4"})
# AMD parts with matrix cores: CDNA Instinct MI100 and later (MFMA), RDNA3/4 Radeon (WMMA)
_AMD_MATRIX = re.compile(r"(?i)\bMI\s?[1-9]\d{2}|Radeon (RX|PRO) [79]\d{3}|W7\d{3}")


@dataclass(frozen=True)
class Premises:
    """What the run already is, so that a fix never asks for what is done or cannot apply."""

    vendor: str  # nvidia | amd | intel | mtia | cpu | unknown (the trace's)
    device: DeviceProperties | None  # the main GPU's properties
    matrix_cores: bool  # the main GPU has Tensor Cores / matrix cores
    matmul_dtypes: dict[str, float]  # peak dtype key of matrix work -> share of its time
    fp32_off_matrix_ns: float  # float32 matrix work on CUDA cores / vector units (trace)
    compiled: str | None  # what shows torch.compile ran (a range or kernel name), or None
    graph_launches: int  # CUDA/HIP graph launches
    vllm: str | None = None  # a vLLM custom operator the run calls (it serves with vLLM), or None
    # the run trains: the trace holds a backward pass (autograd's nodes) or an optimizer step
    training: bool = False
    # the run is inference: the trace records PyTorch's operators (aten::*), and none of them
    # is a backward node or an optimizer step; no fix may speak of learning rates or
    # optimizers. Neither (an Nsight Systems export of CUDA calls only): unknown
    inference: bool = False
    # a loss computed with no backward pass in the trace (an evaluation loop, or a window
    # that ends before the step's backward): neither training nor inference is known
    loss: str | None = None

    @property
    def amd(self) -> bool:
        return self.vendor == "amd"

    @property
    def unit(self) -> str:
        """The matrix units' name for this vendor."""
        if self.vendor == "intel":
            return "XMX matrix engines"
        return "matrix cores (MFMA)" if self.amd else "Tensor Cores"

    @property
    def graphs(self) -> str:
        return "HIP graphs" if self.amd else "CUDA graphs"

    @property
    def graph_api(self) -> bool:
        """The device has a graph API PyTorch exposes (torch.cuda.graph: CUDA graphs on
        NVIDIA, HIP graphs on ROCm). Other devices (MTIA, …) get no graph advice."""
        return self.vendor in ("nvidia", "amd")

    @property
    def low_precision(self) -> bool:
        """Most matrix work already runs in bf16/fp16/fp8/fp4."""
        return sum(v for k, v in self.matmul_dtypes.items() if k in LOW_PRECISION) >= 0.5

    @property
    def tf32_capable(self) -> bool:
        """NVIDIA Ampere or later: float32 matmuls can run on Tensor Cores as TF32."""
        d = self.device
        return self.vendor == "nvidia" and d is not None and d.compute_major >= 8

    @property
    def pre_ampere(self) -> bool:
        """NVIDIA Volta or Turing (compute capability 7.x): Tensor Cores for fp16 only."""
        d = self.device
        return self.vendor == "nvidia" and d is not None and d.compute_major == 7

    @property
    def run_line(self) -> str:
        """One line for the evidence: which kind of run the rule read the trace as."""
        if self.training:
            return "the run trains (a backward pass or an optimizer step in the trace)"
        if self.inference:
            return "no backward pass or optimizer step in the trace: inference"
        if self.loss is not None:
            return (f"a loss is computed ({self.loss}) but the trace holds no backward pass: an "
                    "evaluation, or a window that ends before the backward; whether the run "
                    "trains is not known")
        return "the trace records no PyTorch operators: whether the run trains is not known"

    def describe(self) -> str:
        """One line for the evidence: the device as its vendor names it."""
        d = self.device
        if d is None:
            return "device properties not recorded"
        if self.amd:  # ROCm's computeMajor/Minor are the gfx version, not a CUDA capability
            return f"{d.name or 'AMD GPU'} ({self.unit})"
        if self.vendor != "nvidia":  # a compute capability is NVIDIA's numbering
            return d.name or "device properties not recorded"
        return f"{d.name}, compute capability {d.compute_major}.{d.compute_minor}"


@dataclass(frozen=True)
class Gaps:
    """Idle gaps of the main GPU inside the steps."""

    start: I64
    length: I64
    host_wait: B  # the work after the gap was launched after the gap began
    after: I64  # device row of the op that ends the gap


class Context:
    """What every rule needs, computed once."""

    def __init__(self, a: Analyses) -> None:
        self.a = a
        self.trace = a.trace
        self.n_steps = max(len(a.steps.steps), 1)
        self.step_ns = float(a.breakdown.avg_step_ns)
        self.lo = np.array([s.start for s in a.steps.steps], dtype=np.int64)
        self.hi = np.array([s.end for s in a.steps.steps], dtype=np.int64)

    # ---- scaling -------------------------------------------------------------------
    def finding(self, *, id: str, title: str, saving_ns: float, estimate: str,
                evidence: Sequence[str], fix: str, code: str | None = None,
                source_lines: Sequence[str] = (), references: Sequence[str] = ()) -> Finding:
        """A Finding whose saving is ``saving_ns`` per step (clamped to the step)."""
        saving = max(0.0, min(float(saving_ns), self.step_ns))
        return Finding(id=id, title=title, saving_us=saving / 1000.0, saving_pct=self.pct(saving),
                       estimate=estimate, evidence=tuple(evidence), fix=fix, code=code,
                       source_lines=tuple(source_lines), references=tuple(references))

    def pct(self, ns: float) -> float:
        return 100.0 * ns / self.step_ns if self.step_ns > 0 else 0.0

    @cached_property
    def window(self) -> iv.Union:
        return iv.union(self.lo, self.hi)

    def in_steps(self, ts: I64, end: I64) -> I64:
        """Part of each interval inside the steps."""
        if len(ts) == 0:
            return np.zeros(0, dtype=np.int64)
        return iv.measure_in(self.window, ts, end)

    def per_step_union(self, ts: I64, end: I64) -> float:
        """|union of intervals ∩ steps| / steps, in ns."""
        return iv.length(iv.intersect(iv.union(ts, end), self.window)) / self.n_steps

    # ---- the GPU --------------------------------------------------------------------
    @cached_property
    def has_gpu(self) -> bool:
        return bool(self.trace.has_gpu and (self.trace.device.kind == DEV_KERNEL).any())

    @cached_property
    def main_device(self) -> int:
        dev = self.trace.device
        if len(dev) == 0:
            return -1
        ids, inv = np.unique(dev.device, return_inverse=True)
        return int(ids[int(np.argmax(np.bincount(inv, weights=dev.dur.astype(np.float64))))])

    @cached_property
    def device_sel(self) -> B:
        dev = self.trace.device
        return np.asarray(dev.device == self.main_device, dtype=bool)

    @cached_property
    def kernel_sel(self) -> B:
        """Kernels (not memcpy/memset) of the main GPU."""
        sel: B = self.device_sel & (self.trace.device.kind == DEV_KERNEL)
        return sel

    @cached_property
    def device_in_steps(self) -> F64:
        """Part of each device op inside the steps, in ns."""
        dev = self.trace.device
        return self.in_steps(dev.ts, dev.end).astype(np.float64)

    def device_union(self, sel: B) -> iv.Union:
        """Union of the selected device ops, inside the steps."""
        dev = self.trace.device
        return iv.intersect(iv.union(dev.ts[sel], dev.end[sel]), self.window)

    @cached_property
    def busy(self) -> iv.Union:
        """Main GPU busy (any kernel, memcpy or memset) inside the steps."""
        return self.device_union(self.device_sel)

    @cached_property
    def kernel_busy(self) -> iv.Union:
        return self.device_union(self.kernel_sel)

    @cached_property
    def idle(self) -> iv.Union:
        """Main GPU idle inside the steps (within each step, before/after work included)."""
        return iv.subtract(self.window, self.busy)

    @cached_property
    def busy_per_step(self) -> float:
        return iv.length(self.busy) / self.n_steps

    @cached_property
    def idle_per_step(self) -> float:
        return iv.length(self.idle) / self.n_steps

    def not_busy(self, ts: I64, end: I64) -> I64:
        """Part of each interval inside the steps while the main GPU was idle."""
        if len(ts) == 0:
            return np.zeros(0, dtype=np.int64)
        return iv.measure_in(self.idle, ts, end)

    @cached_property
    def launch_ts(self) -> I64:
        """For each device op, the start of the runtime call that launched it (or -1)."""
        return gather(self.trace.runtime.ts, self.a.links.device_runtime, -1)

    @cached_property
    def gaps(self) -> Gaps:
        """Idle gaps between device ops (strictly inside the GPU's active span per step)."""
        dev = self.trace.device
        sel = np.flatnonzero(self.device_sel)
        if len(sel) == 0:
            e = np.zeros(0, dtype=np.int64)
            return Gaps(e, e, np.zeros(0, dtype=bool), e)
        order = sel[np.argsort(dev.ts[sel], kind="stable")]
        ts, end = dev.ts[order], dev.end[order]
        launch = self.launch_ts[order]
        prev_end = np.maximum.accumulate(end)[:-1]
        gap = ts[1:] - prev_end
        ok = gap > 0
        start, length = prev_end[ok], gap[ok]
        inside = self.in_steps(start, start + length)
        keep = inside > 0
        return Gaps(start[keep], inside[keep], (launch[1:][ok] > prev_end[ok])[keep],
                    order[1:][ok][keep])

    @cached_property
    def device_props(self) -> DeviceProperties | None:
        """The main GPU's deviceProperties; when its id is not described and the trace
        describes one GPU model only, that model (ROCm renumbers devices: id 0 described,
        kernels on device 2)."""
        devs = self.trace.meta.devices
        prop = next((p for p in devs if p.id == self.main_device), None)
        if prop is None and len({(p.name, p.num_sms) for p in devs}) == 1:
            prop = devs[0]
        return prop

    @cached_property
    def premises(self) -> Premises:
        trace, e = self.trace, self.a.efficiency
        dev = trace.device
        kernels = dev.name[dev.kind == DEV_KERNEL]
        prop = self.device_props
        any_mc = bool(names.mask(trace, names.is_tensor_core_kernel)[kernels].any())
        if trace.meta.vendor == "amd":
            mc = any_mc or bool(prop is not None and _AMD_MATRIX.search(prop.name))
        elif trace.meta.vendor == "nvidia":  # Volta (7.0) and later have Tensor Cores
            mc = any_mc or bool(prop is not None and prop.compute_major >= 7)
        else:  # a compute capability is NVIDIA's: other vendors by their kernels only
            mc = any_mc
        dtypes: dict[str, float] = {}
        fp32_off = 0.0
        if e is not None:
            rows = [r for r in e.operators if r.family in MATRIX_FAMILIES and r.dtype]
            total = sum(r.time_ns for r in rows)
            for r in rows:
                dtypes[r.dtype] = dtypes.get(r.dtype, 0.0) + (r.time_ns / total if total else 0.0)
            fp32_off = e.fp32_matmul_ns
        compiled = None
        host = trace.host
        hit = names.mask(trace, names.is_compiled_marker)[host.name]
        if hit.any():
            compiled = trace.name(int(host.name[int(np.argmax(hit))]))
        else:
            ind = names.mask(trace, names.is_inductor_kernel)[kernels]
            if ind.any():
                compiled = trace.name(int(kernels[int(np.argmax(ind))]))
        vllm = names.mask(trace, names.is_vllm_op)[host.name]
        training = bool((names.mask(trace, names.is_autograd_node)
                         | names.mask(trace, names.is_optimizer_step))[host.name].any())
        aten = names.mask(trace, names.is_aten_op)[host.name[host.kind == HOST_OP]]
        loss_rows = names.mask(trace, names.is_loss_op)[host.name]
        loss = (trace.name(int(host.name[int(np.argmax(loss_rows))]))
                if not training and loss_rows.any() else None)
        inference = not training and loss is None and bool(aten.any())
        g = self.a.graphs
        return Premises(vendor=trace.meta.vendor, device=prop, matrix_cores=mc,
                        matmul_dtypes=dtypes, fp32_off_matrix_ns=fp32_off, compiled=compiled,
                        graph_launches=g.graph_launches if g is not None else 0,
                        vllm=trace.name(int(host.name[int(np.argmax(vllm))])) if vllm.any()
                        else None, training=training, inference=inference, loss=loss)

    # ---- host ------------------------------------------------------------------------
    @cached_property
    def times(self) -> NodeTimes:
        return self.a.tree.times

    def _named_ranges(self, predicate: Callable[[str], object]) -> B:
        """Host rows (Python frames aside) whose name satisfies ``predicate``."""
        host = self.trace.host
        rows: B = names.mask(self.trace, predicate)[host.name]
        rows &= host.kind != HOST_PYTHON
        return rows

    @cached_property
    def loader_rows(self) -> B:
        """Host rows that are DataLoader ranges (``enumerate(DataLoader)#...__next__``)."""
        return self._named_ranges(names.is_dataloader)

    @cached_property
    def in_loader(self) -> B:
        """Host rows inside a DataLoader range on their own thread: the input pipeline's
        work when it runs in the training process (num_workers=0: fetch, decode, augment,
        collate). input-pipeline's saving already counts that time, so the operator-share
        rules leave it out instead of claiming it twice."""
        return self._inside(self.loader_rows)

    @cached_property
    def in_optimizer(self) -> B:
        """Host rows of an optimizer step (``Optimizer.step#…`` ranges) and inside one on
        their own thread: the optimizer's per-parameter math. What removes it is a fused or
        foreach optimizer (unfused-optimizer), not torch.compile of the model, so the
        operator-share rules leave it out instead of prescribing the wrong fix for it."""
        rows = self._named_ranges(names.is_optimizer_step)
        return self._inside(rows) | rows

    @cached_property
    def compile_rows(self) -> B:
        """Host rows that are JIT compilation ranges (names.is_jit_compile)."""
        return self._named_ranges(names.is_jit_compile)

    @cached_property
    def in_compile(self) -> B:
        """Host rows inside a JIT compilation range on their own thread (torch.compile's
        tracing runs real operators on fake tensors, Inductor's autotuning runs kernels):
        warm-up paid once per graph or shape, not steady-state work to advise on."""
        return self._inside(self.compile_rows)

    @cached_property
    def compile_time(self) -> iv.Union:
        """Time in JIT compilation ranges (compile_rows, any thread: nvFuser compiles in a
        pool while the caller waits)."""
        host, jit = self.trace.host, np.flatnonzero(self.compile_rows)
        return iv.union(host.ts[jit], host.end[jit])

    @cached_property
    def first_call_rows(self) -> I64:
        """Host rows that are the first call of an operator for its shapes
        (analysis/events/warmup.py: FIRST_CALL_RATIO × slower than the later ones, at least
        FIRST_CALL_MIN_NS): cuDNN's algorithm search, lazy module loading, compilation.

        Judged on operators only, not on record_function ranges (nor on the ranges older
        PyTorch wrote as operators: steps, optimizer steps, DataLoader fetches): a range's
        later calls need not do the same work (an optimizer's nested or per-group step
        ranges of a few µs after a 4 s step), and the operator whose first call holds
        the warm-up is itself judged.

        Without recorded shapes, calls of every shape are compared: judged only for an
        operator that launches device work (its host side is launches, whatever the size),
        not for one that computes on the CPU, whose first call may just be its largest."""
        trace, host = self.trace, self.trace.host
        ranges = names.mask(trace, names.is_profiler_step) | names.mask(
            trace, names.is_optimizer_step) | names.mask(trace, names.is_dataloader)
        judged = (host.input_dims >= 0) | (self.times.device_total > 0)
        ops = np.flatnonzero((host.kind == HOST_OP) & ~ranges[host.name] & judged)
        return first_calls(trace, ops, FIRST_CALL_MIN_NS, self.sync_time)

    @cached_property
    def first_launch_rows(self) -> I64:
        """Runtime rows that are the first launch of a kernel (lazy module loading:
        analysis/events/warmup.py), at least FIRST_CALL_MIN_NS."""
        return first_launches(self.trace, self.a.links, FIRST_CALL_MIN_NS)

    @cached_property
    def first_call_time(self) -> iv.Union:
        """Time in first calls (first_call_rows) and first launches (first_launch_rows),
        without the synchronising calls inside them (sync_time: host-sync's)."""
        host, rt = self.trace.host, self.trace.runtime
        calls, launches = self.first_call_rows, self.first_launch_rows
        return iv.subtract(iv.union(np.concatenate((host.ts[calls], rt.ts[launches])),
                                    np.concatenate((host.end[calls], rt.end[launches]))),
                           self.sync_time)

    @cached_property
    def sync_time(self) -> iv.Union:
        """Time in synchronising calls (sync_calls)."""
        rt, sync = self.trace.runtime, self.sync_calls
        return iv.union(rt.ts[sync], rt.end[sync])

    @cached_property
    def warm_up_idle(self) -> iv.Union:
        """Main-GPU idle time inside the steps while the host compiled or made a first call or
        launch: warm-up, paid once, not the steady state a rule's saving may claim."""
        return iv.intersect(self.idle, iv.merge(self.compile_time, self.first_call_time))

    @cached_property
    def steady_idle(self) -> iv.Union:
        """Main-GPU idle time inside the steps without the warm-up (warm_up_idle)."""
        return iv.subtract(self.idle, self.warm_up_idle)

    def _inside(self, ranges_mask: B) -> B:
        """Host rows that lie inside one of the ranges ``ranges_mask`` on their own thread
        (the ranges themselves excluded)."""
        host = self.trace.host
        r = np.flatnonzero(ranges_mask)
        out = iv.within_ranges(host.ts[r], host.end[r], host.tid[r], host.ts, host.end,
                               host.tid)
        out[r] = False
        return out

    @cached_property
    def sync_calls(self) -> B:
        """Runtime rows that block the host until the device catches up: the synchronising
        calls (``names.SYNC_CALLS``) and the calls that issued a device-to-pageable copy
        (``names.is_dtoh_pageable``: even cudaMemcpyAsync/hipMemcpyAsync return only once
        such a copy is done, after all work queued before it on the stream)."""
        rt, dev = self.trace.runtime, self.trace.device
        sel: B = names.mask_in(self.trace, names.SYNC_CALLS)[rt.name]
        issuer = self.a.links.device_runtime
        d2h = (dev.kind == DEV_MEMCPY) & (issuer >= 0)
        d2h &= names.mask(self.trace, names.is_dtoh_pageable)[dev.name]
        if d2h.any():
            sel = sel.copy()
            sel[issuer[d2h]] = True
        return sel

    def closing_synchronize(self, calls: I64) -> B:
        """For the runtime calls ``calls``: in an inference run (``Premises.inference``),
        the explicit synchronizes (``…Synchronize``: cudaDeviceSynchronize,
        hipStreamSynchronize, …) made outside any operator after their step's last kernel
        launch on the main GPU. PyTorch records ``torch.cuda.synchronize()`` as such a bare
        call, and inference harnesses (benchmarks, servers) make it at the end of every
        request, to read the clock or hand the result back: the wait for the step to finish,
        not the model's own stall. A result copy (``.cpu()``, ``.item()``) runs inside an
        operator and stays counted; so does any synchronize of a training step."""
        out = np.zeros(len(calls), dtype=bool)
        if not self.premises.inference or not len(self.lo) or not len(calls):
            return out
        trace, steps = self.trace, self.a.steps
        rt, dev_rt = trace.runtime, self.a.links.device_runtime
        launches = np.unique(dev_rt[self.kernel_sel & (dev_rt >= 0)])
        step = step_index(steps, rt.ts[launches])
        never = np.iinfo(np.int64).min  # a step without a launch awaits nothing
        last = np.full(len(steps.steps), never)
        np.maximum.at(last, step[step >= 0], rt.ts[launches][step >= 0])
        s = step_index(steps, rt.ts[calls])
        after = last[np.maximum(s, 0)]
        bare = self.a.tree.runtime_owner[calls] < 0
        explicit = names.mask(trace, names.is_synchronize_call)[rt.name[calls]]
        out = bare & explicit & (s >= 0) & (after > never) & (rt.ts[calls] > after)
        return out

    @cached_property
    def operators(self) -> I64:
        """Host rows that are operators (``NodeTimes.is_operator``)."""
        return np.flatnonzero(self.times.is_operator)

    def operators_within(self, u: iv.Union) -> I64:
        """Operators lying entirely inside the union ``u``."""
        host, ops = self.trace.host, self.operators
        return ops[iv.measure_in(u, host.ts[ops], host.end[ops]) >= host.dur[ops]]

    def source_lines(self, host_idx: I64, weight: F64, top: int = 5) -> list[str]:
        """User source lines responsible for ``host_idx`` (host rows), heaviest first.

        Uses the nearest enclosing op with a "Call stack" (torch 1.x ``with_stack``), else
        the innermost enclosing user ``python_function`` frame (torch 2.x ``with_stack``).
        """
        if len(host_idx) == 0:
            return []
        host, parent = self.trace.host, self.a.tree.parent
        idx = host_idx.astype(np.int64).copy()
        for _ in range(int(self.a.tree.depth.max(initial=0)) + 1):
            up = (host.call_stack[idx] < 0) & (parent[idx] >= 0)
            if not up.any():
                break
            idx = np.where(up, parent[idx], idx)
        totals: dict[str, float] = {}
        stack = host.call_stack[idx]
        has = stack >= 0
        if has.any():
            ids, inv = np.unique(stack[has], return_inverse=True)
            w = np.bincount(inv, weights=weight[has])
            for sid, wt in zip(ids.tolist(), w.tolist(), strict=False):
                frame = first_user_frame(self.trace.strings[sid])
                if frame:
                    totals[frame] = totals.get(frame, 0.0) + wt
        rest = ~has
        if rest.any():
            for frame, wt in self._python_frames(host_idx[rest], weight[rest]).items():
                totals[frame] = totals.get(frame, 0.0) + wt
        ranked = sorted(totals.items(), key=lambda kv: -kv[1])[:top]
        return [f"{frame}  ({format_us(wt / self.n_steps / 1000.0)} per step)"
                for frame, wt in ranked]

    def _python_frames(self, host_idx: I64, weight: F64) -> dict[str, float]:
        host = self.trace.host
        user_name = names.mask(self.trace, is_user_frame)
        py = np.flatnonzero((host.kind == HOST_PYTHON) & user_name[host.name])
        out: dict[str, float] = {}
        if len(py) == 0:
            return out
        t_first, t_last = int(host.ts[py].min()), int(host.end[py].max())
        for tid in np.unique(host.tid[host_idx]).tolist():
            frames = py[host.tid[py] == tid]
            q = host_idx[host.tid[host_idx] == tid]
            qw = weight[host.tid[host_idx] == tid]
            if len(frames) == 0 or len(q) == 0:
                continue
            frames = frames[np.argsort(host.ts[frames], kind="stable")]
            fts, fend = host.ts[frames], host.end[frames]
            k = np.searchsorted(fts, host.ts[q], side="right") - 1
            qend = host.end[q]
            for _ in range(256):  # walk back over finished siblings to the innermost ancestor
                bad = (k >= 0) & (fend[np.maximum(k, 0)] < qend)
                if not bad.any():
                    break
                k = np.where(bad, k - 1, k)
            ok = (k >= 0) & (fend[np.maximum(k, 0)] >= qend)
            if not ok.any():
                continue
            hit = frames[k[ok]]
            # frames already running when profiling began (and still running at its end)
            # carry the line where profiling started (prof.step()), not their loop line
            outer = (host.ts[hit] <= t_first + OUTER_FRAME_NS) & (
                host.end[hit] >= t_last - OUTER_FRAME_NS)
            keys = host.name[hit].astype(np.int64) * 2 + outer
            ids, inv = np.unique(keys, return_inverse=True)
            w = np.bincount(inv, weights=qw[ok])
            for key, wt in zip(ids.tolist(), w.tolist(), strict=False):
                frame = self.trace.strings[key // 2]
                if key % 2:
                    frame = outer_frame_label(frame)
                out[frame] = out.get(frame, 0.0) + wt
        return out


OUTER_FRAME_NS = 1_000_000
_TRACER_FRAME = re.compile(r"^(.*)\((\d+)\): (.*)$")


def outer_frame_label(frame: str) -> str:
    """'train.py(99): _train' of a frame running the whole capture, named honestly.

    The Python tracer names frames already on the stack when profiling starts with their
    line at that moment: the prof.step() (or profiler start) line, not the loop's line.
    """
    m = _TRACER_FRAME.match(frame)
    if not m:
        return frame
    return (f"{m.group(1)}: {m.group(3)}() — the function running the loop (no loop line "
            f"in the trace; line {m.group(2)} is where profiling started)")


def fmt_ns(ns: float) -> str:
    return format_us(ns / 1000.0)


def top_by_name(names: npt.NDArray[np.int32], weight: F64, strings: tuple[str, ...],
                top: int = 5) -> list[tuple[str, float, int]]:
    """(name, total weight, count) for the heaviest names."""
    if len(names) == 0:
        return []
    ids, inv = np.unique(names, return_inverse=True)
    w = np.bincount(inv, weights=weight)
    c = np.bincount(inv)
    order = np.argsort(-w, kind="stable")[:top]
    return [(strings[int(ids[i])], float(w[i]), int(c[i])) for i in order]


def short(name: str, width: int = 90) -> str:
    return short_name(name, width)
