"""Advisor rules on synthetic traces: each fires on the problem and stays silent on a
healthy GPU-bound trace."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from rich.console import Console
from tests.builders import TraceBuilder

from stepscope.advice import RULES, Finding, Rule, advise
from stepscope.advice.context import Context, first_user_frame
from stepscope.analysis.suite import run_analyses
from stepscope.report.text.findings import render_finding

GEMM_TC = "sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"  # noqa: E501


def findings(b: TraceBuilder, tmp_path: Path) -> list[Finding]:
    return advise(run_analyses(b.load(tmp_path)), replay=False)


def ids(fs: list[Finding]) -> list[str]:
    return [f.id for f in fs]


def healthy(b: TraceBuilder, *, kernel: str = GEMM_TC, op: str = "aten::mm",
            occupancy: float = 50.0, n: int = 100, cat: str = "kernel") -> None:
    """One 10 ms step, the GPU busy all of it with kernels queued well ahead."""
    with b.step(1, 0, 10_000):
        for i in range(n):
            o = b.op(op, 10 + i * 50, 40)
            b.launch(o, "cudaLaunchKernel", 12 + i * 50, 5, kernel=kernel, k_ts=100 + i * 99,
                     k_dur=99, cat=cat, **{"est. achieved occupancy %": occupancy,
                                           "blocks per SM": 4.0})


def _gap(b: TraceBuilder) -> None:
    """The kernel that starts a 10 ms step's gap: a 1 ms GEMM, then the GPU idle."""
    mm = b.op("aten::mm", 0, 10)
    b.launch(mm, "cudaLaunchKernel", 1, 5, kernel=GEMM_TC, k_ts=10, k_dur=1000)


@contextlib.contextmanager
def _gap_step(b: TraceBuilder) -> Iterator[None]:
    """A 10 ms step: a 1 ms GEMM, then the GPU idle while the body's host work runs (about
    1.1-5.9 ms), then a 3.99 ms GEMM launched at 5.95 ms."""
    with b.step(1, 0, 10_000):
        _gap(b)
        yield
        mm2 = b.op("aten::mm", 5950, 10)
        b.launch(mm2, "cudaLaunchKernel", 5951, 5, kernel=GEMM_TC, k_ts=6000, k_dur=3990)


def test_healthy_trace_is_silent(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b)
    assert findings(b, tmp_path) == []


def test_sync_leads_and_names_the_python_line(tmp_path: Path) -> None:
    b = TraceBuilder()
    stack = "train.py(12): train_step;train.py(30): main"
    lib = "site-packages/torch/_tensor.py(900): item;" + stack
    with b.step(1, 0, 10_000):
        for i in range(5):
            t = i * 2000
            mm = b.op("aten::mm", t, 10)
            b.launch(mm, "cudaLaunchKernel", t + 1, 5, kernel=GEMM_TC, k_ts=t + 10, k_dur=1000)
            item = b.op("aten::item", t + 20, 1000, stack=lib)
            b.runtime("cudaStreamSynchronize", t + 30, 985, owner=item)
            b.op("aten::empty", t + 1100, 5)
            b.annotation("Optimizer.step#SGD.step", t + 1200, 5)  # a training loop
    fs = findings(b, tmp_path)
    assert fs[0].id == "host-sync"
    f = fs[0]
    assert f.saving_pct == pytest.approx(49.25, abs=1.0)  # 5 × 985 µs of a 10 ms step
    assert f.source_lines and f.source_lines[0].startswith("train.py(12): train_step")
    assert any("aten::item" in e for e in f.evidence)


def test_launch_bound(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        b.small_launches(1000, 10)
    fs = findings(b, tmp_path)
    f = next(f for f in fs if f.id == "launch-bound")
    assert f.saving_pct > 50  # 8 µs of every 10 µs idle, capped by 6 µs of launch
    assert "torch.compile" in (f.code or "")


@pytest.mark.parametrize(("kernel", "rule"), [
    ("volta_sgemm_128x64_nn", "tensor-cores"),
])
def test_tensor_cores(tmp_path: Path, kernel: str, rule: str) -> None:
    b = TraceBuilder()
    healthy(b, kernel=kernel)
    f = next(f for f in findings(b, tmp_path) if f.id == rule)
    assert f.saving_pct == pytest.approx(49.5, abs=1.0)  # half of 99 % busy
    assert "bfloat16" in (f.code or "")  # compute capability 9.0


def test_tensor_cores_silent_before_volta(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.device_properties[0].update(computeMajor=6, computeMinor=0)
    healthy(b, kernel="volta_sgemm_128x64_nn")
    assert "tensor-cores" not in ids(findings(b, tmp_path))


# a kernel of one's own: a library GEMM whose grid fills the GPU runs one or two blocks per
# SM by design and is not judged by its occupancy (test_advice_premises.py)
OWN_KERNEL = "void my_scan_kernel<float, 256>(float const*, float*, int)"


def test_low_occupancy(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, occupancy=5.0, kernel=OWN_KERNEL)
    f = next(f for f in findings(b, tmp_path) if f.id == "low-occupancy")
    assert f.saving_pct == pytest.approx(99 * (1 - 5 / 15), abs=1.0)


def test_elementwise_dominated(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, op="aten::mul",
            kernel="void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>")
    f = next(f for f in findings(b, tmp_path) if f.id == "elementwise-dominated")
    assert f.saving_pct == pytest.approx(49.5, abs=1.0)


def test_elementwise_leaves_the_optimizer_step_to_unfused_optimizer(tmp_path: Path) -> None:
    # the same pointwise kernels launched inside Optimizer.step: compiling the model would
    # not fuse them (a fused or foreach optimizer does), so this rule does not claim them
    b = TraceBuilder()
    kernel = "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>"
    with b.step(1, 0, 10_000):
        b.annotation("Optimizer.step#AdamW.step", 5, 9_000)
        for i in range(100):
            o = b.op("aten::mul_", 10 + i * 50, 40)
            b.launch(o, "cudaLaunchKernel", 12 + i * 50, 5, kernel=kernel, k_ts=100 + i * 99,
                     k_dur=99)
    assert "elementwise-dominated" not in ids(findings(b, tmp_path))


def test_elementwise_names_what_it_left_in_the_optimizer(tmp_path: Path) -> None:
    b = TraceBuilder()
    kernel = "void at::native::vectorized_elementwise_kernel<4, MulFunctor<float>>"
    with b.step(1, 0, 10_000):
        for i in range(100):
            o = b.op("aten::mul", 10 + i * 50, 40)
            b.launch(o, "cudaLaunchKernel", 12 + i * 50, 5, kernel=kernel, k_ts=100 + i * 99,
                     k_dur=60)
        b.annotation("Optimizer.step#AdamW.step", 5_100, 4_000)
        for i in range(20):
            o = b.op("aten::mul_", 5_110 + i * 50, 40)
            b.launch(o, "cudaLaunchKernel", 5_112 + i * 50, 5, kernel=kernel,
                     k_ts=10_000 + i * 99 - 2_000, k_dur=60)
    f = next(f for f in findings(b, tmp_path) if f.id == "elementwise-dominated")
    assert f.evidence[-1] == ("1.20 ms per step of elementwise kernels inside optimizer.step "
                              "left out: the optimizer's per-parameter math, which a fused or "
                              "foreach optimizer removes, not this fix")
    assert all("aten::mul_" not in e for e in f.evidence)


def test_elementwise_on_cpu_leaves_the_optimizer_step(tmp_path: Path) -> None:
    # a CPU profile: AdamW(foreach=False)'s sqrt/addcdiv_ per parameter inside its step are
    # the optimizer's (a fused=True optimizer removes them; compiling the model does not)
    b = TraceBuilder(device_properties=[])
    with b.step(1, 0, 10_000):
        for i in range(45):
            b.op("aten::mul", 10 + i * 100, 100)
        b.op("aten::mm", 4_600, 2_500)
        b.annotation("Optimizer.step#AdamW.step", 7_100, 2_900)
        for i in range(14):
            b.op("aten::sqrt" if i % 2 else "aten::addcdiv_", 7_110 + i * 200, 200)
    f = next(f for f in findings(b, tmp_path) if f.id == "elementwise-dominated")
    assert f.evidence[0] == "pointwise operators: 45.9 % of operator CPU self time"
    assert f.evidence[1].startswith("aten::mul: 4.50 ms CPU self time per step")
    assert f.evidence[-1].startswith("2.80 ms per step of pointwise operators inside "
                                     "optimizer.step left out")
    assert f.saving_us == pytest.approx(2250.0)


def test_materialising_copies(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, op="aten::copy_", kernel="void at::native::unrolled_elementwise_kernel<copy>")
    assert "materialising-copies" in ids(findings(b, tmp_path))


def _copy_trace(b: TraceBuilder, name: str) -> None:
    with b.step(1, 0, 10_000):
        o = b.op("aten::copy_", 10, 3000)
        b.launch(o, "cudaMemcpyAsync", 20, 2900, kernel=name, k_ts=100, k_dur=2000,
                 cat="gpu_memcpy", bytes=400_000_000)
        mm = b.op("aten::mm", 3100, 10)
        b.launch(mm, "cudaLaunchKernel", 3101, 5, kernel=GEMM_TC, k_ts=3110, k_dur=6800)


def test_pageable_memcpy(tmp_path: Path) -> None:
    b = TraceBuilder()
    _copy_trace(b, "Memcpy HtoD (Pageable -> Device)")
    fs = findings(b, tmp_path)
    f = next(f for f in fs if f.id == "pageable-memcpy")
    assert f.saving_pct == pytest.approx(20.0, abs=0.5)
    assert "h2d-not-overlapped" not in ids(fs)


def test_h2d_not_overlapped(tmp_path: Path) -> None:
    b = TraceBuilder()
    _copy_trace(b, "Memcpy HtoD (Pinned -> Device)")
    fs = findings(b, tmp_path)
    f = next(f for f in fs if f.id == "h2d-not-overlapped")
    assert f.saving_pct == pytest.approx(20.0, abs=0.5)
    assert "pageable-memcpy" not in ids(fs)


def test_gpu_gaps_and_cpu_ops(tmp_path: Path) -> None:
    b = TraceBuilder()
    with _gap_step(b):
        b.op("aten::nonzero", 1100, 4800, stack="model.py(77): forward")
    fs = findings(b, tmp_path)
    gaps = next(f for f in fs if f.id == "gpu-gaps")
    assert gaps.saving_pct == pytest.approx(49.9, abs=0.5)
    assert any("aten::nonzero" in e for e in gaps.evidence)
    cpu = next(f for f in fs if f.id == "cpu-ops-in-gpu-job")
    assert cpu.saving_pct == pytest.approx(48.0, abs=0.5)
    assert cpu.source_lines[0].startswith("model.py(77): forward")


def test_cpu_ops_leave_out_operators_that_launch_nothing_anywhere(tmp_path: Path) -> None:
    """aten::empty or aten::t between kernels is host dispatch, not CPU work that could run on
    the GPU: the same gap filled with them gives no cpu-ops finding (gpu-gaps still fires)."""
    b = TraceBuilder()
    with _gap_step(b):
        for i in range(40):
            b.op("aten::empty" if i % 2 else "aten::t", 1100 + i * 120, 100)
    fired = ids(findings(b, tmp_path))
    assert "gpu-gaps" in fired and "cpu-ops-in-gpu-job" not in fired


def test_cpu_ops_leave_out_collectives(tmp_path: Path) -> None:
    # a CPU-side all-gather (gloo, or a host wait for peers) is communication, not an
    # operator to run on the GPU
    b = TraceBuilder()
    with _gap_step(b):
        b.op("c10d::allgather_", 1100, 4800)
    assert "cpu-ops-in-gpu-job" not in ids(findings(b, tmp_path))


def test_cpu_ops_leave_out_the_optimizer_step(tmp_path: Path) -> None:
    """An unfused Adam's bias corrections on CPU step tensors (pow, rsub, item) are the
    optimizer's: a fused or foreach optimizer removes them, "run them on the GPU" does not."""
    b = TraceBuilder()
    with _gap_step(b):
        b.op("aten::nonzero", 1100, 1000)
        b.annotation("Optimizer.step#Adam.step", 2200, 3700)
        for i in range(30):
            b.op("aten::pow" if i % 2 else "aten::rsub", 2210 + i * 120, 100)
    cpu = next(f for f in findings(b, tmp_path) if f.id == "cpu-ops-in-gpu-job")
    assert cpu.evidence[0] == "CPU-only operators run 1.00 ms per step while the GPU is idle"
    assert cpu.evidence[-1].startswith("3.00 ms per step of CPU-only operators inside "
                                       "optimizer.step left out")
    assert not any("aten::pow" in e for e in cpu.evidence)


def test_small_batch(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        for i in range(20):
            t = i * 500
            o = b.op("aten::mm", t, 10)
            b.launch(o, "cudaLaunchKernel", t + 1, 5, kernel=GEMM_TC, k_ts=t + 10, k_dur=100,
                     **{"blocks per SM": 0.2})
    f = next(f for f in findings(b, tmp_path) if f.id == "small-batch")
    assert f.saving_pct == pytest.approx(40.0, abs=1.0)  # half of 80 % idle


def _first_launch_then_short_kernels(k_dur: float) -> TraceBuilder:
    """A 10 ms step: a 4 ms first launch of ``add_kernel`` (the module loaded lazily) with
    the GPU idle, then 12 launches of it taking 5 µs, each kernel ``k_dur`` µs."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        first = b.op("aten::add", 0, 4100)
        b.launch(first, "cudaLaunchKernel", 1, 4000, kernel="add_kernel", k_ts=4010,
                 k_dur=k_dur, **{"blocks per SM": 0.2})
        for i in range(12):
            t = 4200 + i * 480
            o = b.op("aten::add", t, 10)
            b.launch(o, "cudaLaunchKernel", t + 1, 5, kernel="add_kernel", k_ts=t + 10,
                     k_dur=k_dur, **{"blocks per SM": 0.2})
    return b


def test_small_batch_leaves_out_warm_up(tmp_path: Path) -> None:
    """GPU idle time during a first launch (lazy module loading) is paid once: a larger batch
    does not shrink it. 13 kernels of 100 µs; 4.01 ms of the 10 ms step is that warm-up, so
    the saving is half of the 4.69 ms of steady idle time (not of 8.7 ms)."""
    f = next(f for f in findings(_first_launch_then_short_kernels(100), tmp_path)
             if f.id == "small-batch")
    assert f.saving_pct == pytest.approx(23.45, abs=0.05)
    assert f.evidence[0].startswith("GPU utilization 21.7 % without warm-up (busy 1.30 ms of "
                                    "5.99 ms per step; 13.0 % with it)")
    assert f.evidence[-1].startswith("4.01 ms per step of GPU idle time is warm-up, not counted")
    # kernels of 300 µs: 39 % busy with the warm-up, 65 % without it, so no small batch
    assert "small-batch" not in ids(findings(_first_launch_then_short_kernels(300), tmp_path))


@pytest.mark.parametrize(("cat", "name", "shapes", "warm", "cpu_ops"), [
    ("cpu_op", "aten::nonzero", True, True, False),  # an operator's first call for its shape
    # no shapes recorded: a CPU-computing operator's first call may be its largest
    ("cpu_op", "aten::nonzero", False, False, True),
    ("user_annotation", "encode", True, False, True),  # a record_function range: not judged
    # an optimizer step is not judged either; the CPU work inside it is the optimizer's
    # (unfused-optimizer), so cpu-ops-in-gpu-job leaves it out too
    ("user_annotation", "Optimizer.step#Adam.step", True, False, False),
    ("cpu_op", "Optimizer.step#Adam.step", True, False, False),  # older PyTorch: an op
])
def test_first_calls_are_judged_on_operators_only(tmp_path: Path, cat: str, name: str,
                                                   shapes: bool, warm: bool,
                                                   cpu_ops: bool) -> None:
    """A 4 ms first call, then two of 20 µs: warm-up for an operator (same work, later
    fast), not for a record_function range, whose later calls need not do the same work
    (an MTIA trace's 4.36 s optimizer step, its "later calls" nested sub-steps of µs), nor
    for a CPU-computing operator whose calls' shapes are not recorded. The CPU-only work
    inside then stays counted (cpu-ops-in-gpu-job), unless it is an optimizer step's."""
    dims = [[64]] if shapes else None
    b = TraceBuilder()
    with _gap_step(b):
        b.op(name, 1100, 4000, cat=cat, input_dims=dims)
        b.op("aten::copy_", 1110, 3900)  # CPU work inside it, the GPU idle
        for t in (5200, 5300):
            b.op(name, t, 20, cat=cat, input_dims=dims)
    ctx = Context(run_analyses(b.load(tmp_path)))
    assert (len(ctx.first_call_time[0]) > 0) is warm
    fired = ids(advise(ctx.a, replay=False))
    assert ("cpu-ops-in-gpu-job" in fired) is cpu_ops


def test_a_first_call_slow_from_a_synchronisation_is_no_warm_up(tmp_path: Path) -> None:
    """A first aten::to of 6.6 ms whose cudaStreamSynchronize waited 6.56 ms for the GPU
    (dlrm rank 1), its later calls 30 µs: a host-device synchronisation, not warm-up (the
    call is judged on its time outside synchronising calls)."""
    b = TraceBuilder()
    with b.step(1, 0, 20_000):
        mm = b.op("aten::mm", 0, 10)
        b.launch(mm, "cudaLaunchKernel", 1, 5, kernel=GEMM_TC, k_ts=10, k_dur=6500)
        for t, wait in ((100, 6560), (8000, 5), (9000, 5), (10000, 5)):
            to = b.op("aten::to", t, wait + 30, input_dims=[[351]])
            b.runtime("cudaStreamSynchronize", t + 10, wait, owner=to)
    ctx = Context(run_analyses(b.load(tmp_path)))
    assert len(ctx.first_call_rows) == 0 and len(ctx.first_call_time[0]) == 0


def test_a_window_of_first_calls_says_to_profile_after_them(tmp_path: Path) -> None:
    """One 10 ms step, 7 ms of it the first call of a convolution (cuDNN's algorithm search:
    its later calls take 50 µs) under aten::conv2d: the profile measures warm-up. The
    finding names the innermost first call and ranks low (nominal 1 %)."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        for i, t in enumerate((0, 8000, 8500, 9000)):
            dur = 7000 if i == 0 else 50
            b.op("aten::conv2d", t, dur + 20, input_dims=[[8, 3, 32, 32]])
            conv = b.op("aten::cudnn_convolution", t + 5, dur, input_dims=[[8, 3, 32, 32]])
            b.launch(conv, "cudaLaunchKernel", t + dur - 10, 5, kernel=GEMM_TC,
                     k_ts=t + dur, k_dur=300)
    f = next(f for f in findings(b, tmp_path) if f.id == "warmup-in-window")
    assert f.title == "The profile is dominated by first calls (warm-up): profile after it"
    assert f.saving_pct == pytest.approx(1.0)
    assert f.evidence[0].startswith("first calls and first launches run 7.02 ms of the "
                                    "10.00 ms profiled (70 %)")
    assert f.evidence[1] == "slowest first calls: aten::cudnn_convolution (7.00 ms)"
    assert "schedule(wait=1, warmup=2" in (f.code or "")


def test_a_cpu_profile_of_first_calls_names_no_gpu_library(tmp_path: Path) -> None:
    """A CPU profile whose window is mostly a first convolution (oneDNN builds its
    primitive on first use): the finding speaks of the CPU's warm-up, not cuDNN's."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        for i, t in enumerate((0, 8000, 8500, 9000)):
            b.op("aten::mkldnn_convolution", t, 7000 if i == 0 else 50,
                 input_dims=[[8, 3, 32, 32]])
    f = next(f for f in findings(b, tmp_path) if f.id == "warmup-in-window")
    assert "oneDNN primitive creation" in f.estimate
    assert "cuDNN" not in f.estimate and "cudnn" not in f.fix


@pytest.mark.parametrize(("op", "fires"), [("aten::add_", True), ("aten::_foreach_add_", False)])
def test_unfused_optimizer(tmp_path: Path, op: str, fires: bool) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        mm = b.op("aten::mm", 0, 10)
        b.launch(mm, "cudaLaunchKernel", 1, 5, kernel=GEMM_TC, k_ts=10, k_dur=7000)
        b.annotation("Optimizer.step#SGD.step", 7100, 2800)
        for i in range(100):
            t = 7110 + i * 25
            o = b.op(op, t, 20)
            b.launch(o, "cudaLaunchKernel", t + 1, 5, kernel="void at::native::add_kernel",
                     k_ts=t + 8, k_dur=2)
    assert ("unfused-optimizer" in ids(findings(b, tmp_path))) is fires


def test_a_failing_rule_does_not_break_the_report(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, occupancy=5.0, kernel=OWN_KERNEL)

    def boom(ctx: Context) -> Finding | None:
        raise RuntimeError("kaput")

    fs = advise(run_analyses(b.load(tmp_path)), {**RULES, "boom": boom}, replay=False)
    assert ids(fs)[0] == "low-occupancy"
    assert fs[-1].id == "advisor-error" and "kaput" in fs[-1].evidence[0]


def test_rules_modelled_by_replays_run_first_and_failures_keep_the_rules_order(
        tmp_path: Path) -> None:
    """The replayed rules run first and the others while the replays run; the findings
    and the failures read as if every rule ran in its table's order."""
    b = TraceBuilder()
    healthy(b, occupancy=5.0, kernel=OWN_KERNEL)
    ran: list[str] = []

    def failing(name: str) -> Rule:
        def rule(ctx: Context) -> Finding | None:
            ran.append(name)
            raise RuntimeError(f"{name} broke")
        return rule

    rules = {"early": failing("early"), **RULES, "host-sync": failing("host-sync"),
             "late": failing("late")}
    analyses = run_analyses(b.load(tmp_path))
    fs = advise(analyses, rules)
    assert ran.index("host-sync") < ran.index("early") < ran.index("late")
    assert fs[-1].id == "advisor-error"
    assert [e.split(":")[0] for e in fs[-1].evidence] == ["early", "host-sync", "late"]
    plain = advise(analyses, {k: v for k, v in rules.items() if k not in
                              ("early", "host-sync", "late")})
    assert ids(fs)[:-1] == [i for i in ids(plain) if i != "host-sync"]


def test_json_and_text_rendering(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, op="aten::copy_", kernel="copy<[bold]>&")
    fs = findings(b, tmp_path)
    assert fs
    data: dict[str, Any] = fs[0].to_json()
    msgspec.json.encode(data)
    assert set(data) == {"id", "title", "severity", "estimated_saving", "evidence",
                         "source_lines", "fix", "references"}
    console = Console(record=True, width=120)
    render_finding(console, fs[0], 1)
    out = console.export_text()
    assert "1. " in out and "fix:" in out


def test_first_user_frame() -> None:
    stack = ("/usr/lib/python3/site-packages/torch/_tensor.py(1): item;"
             "torch/nn/modules/module.py(2): _call_impl;"
             "/home/me/train.py(42): step;/home/me/train.py(90): main")
    assert first_user_frame(stack) == "/home/me/train.py(42): step"
    assert first_user_frame("torch/x.py(1): f") is None


# ---- numbers shown to users, pinned -----------------------------------------------------


def test_launch_bound_saving_is_capped_by_launch_time(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        b.small_launches(1000, 10)
    f = next(f for f in findings(b, tmp_path) if f.id == "launch-bound")
    # host-wait idle 999 × 8 µs, launch calls 1000 × 6 µs less the 2 µs past the step's end
    assert f.saving_us == pytest.approx(5998.0)
    assert "1,000 kernel launches per step, 6.00 ms of CPU time per step in launch calls" \
        in f.evidence
    assert any("7.99 ms per step waiting" in e and "999 gaps" in e for e in f.evidence)


def test_small_batch_projection(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        for i in range(20):
            t = i * 500
            o = b.op("aten::mm", t, 10)
            b.launch(o, "cudaLaunchKernel", t + 1, 5, kernel=GEMM_TC, k_ts=t + 10, k_dur=100,
                     **{"blocks per SM": 0.2})
    f = next(f for f in findings(b, tmp_path) if f.id == "small-batch")
    assert f.saving_us == pytest.approx(4000.0)  # half of 8 ms idle
    # busy 2 ms, idle 8 ms: twice the samples in 2 × 2 + 8 ms; 10 / (2 + 4) = 1.67×
    assert "doubling the batch: about 12.00 ms per step for twice the samples, up to 67 % " \
        "more samples/s" in f.evidence
    assert "mean kernel 100.0 µs" in f.evidence


def test_materialising_copies_saving(tmp_path: Path) -> None:
    b = TraceBuilder()
    healthy(b, op="aten::copy_", kernel="void at::native::unrolled_elementwise_kernel<copy>")
    f = next(f for f in findings(b, tmp_path) if f.id == "materialising-copies")
    assert f.saving_us == pytest.approx(9900.0)  # 100 copy kernels × 99 µs
    assert f.evidence[0] == "copy/layout operators: 100.0 % of GPU kernel time"
    assert "aten::copy_: 9.90 ms of kernels per step (100 kernels)" in f.evidence


def _copies_under(tmp_path: Path, outer: str | None) -> list[str]:
    """Steps whose kernels are copies launched by aten::copy_, called from ``outer`` (an
    operator, a DataLoader range) or from the user's code (None)."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        for i in range(100):
            t = 10 + i * 99
            if outer is not None and outer.startswith("enumerate(DataLoader)"):
                b.annotation(outer, t, 80)
            elif outer is not None:
                b.op(outer, t, 80)
            cp = b.op("aten::copy_", t + 1, 70)
            b.launch(cp, "cudaLaunchKernel", t + 2, 5,
                     kernel="void at::native::unrolled_elementwise_kernel<copy>",
                     k_ts=t + 10, k_dur=80)
    return [f.id for f in findings(b, tmp_path)]


def test_materialising_copies_leaves_out_other_operators_and_the_loader(
        tmp_path: Path) -> None:
    """A copy an operator makes inside itself (autocast's input cast inside aten::linear,
    convolution_backward's contiguous) or the DataLoader's own work is not the user's copy."""
    for i, outer in enumerate((None, "aten::reshape", "aten::linear",
                               "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")):
        (tmp_path / str(i)).mkdir()
        fired = "materialising-copies" in _copies_under(tmp_path / str(i), outer)
        assert fired == (outer in (None, "aten::reshape")), outer


def test_unfused_optimizer_saving(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        mm = b.op("aten::mm", 0, 10)
        b.launch(mm, "cudaLaunchKernel", 1, 5, kernel=GEMM_TC, k_ts=10, k_dur=7000)
        b.annotation("Optimizer.step#SGD.step", 7100, 2800)
        for i in range(100):
            t = 7110 + i * 25
            o = b.op("aten::add_", t, 20)
            b.launch(o, "cudaLaunchKernel", t + 1, 5, kernel="void at::native::add_kernel",
                     k_ts=t + 8, k_dur=2)
    f = next(f for f in findings(b, tmp_path) if f.id == "unfused-optimizer")
    # 2.8 ms of optimizer.step minus 100 × 2 µs of kernels, all of it with the GPU idle
    assert f.saving_us == pytest.approx(2600.0)
    assert f.evidence[0].startswith("Optimizer.step#SGD.step: 2.80 ms per step (28.0 %), "
                                    "100 kernels per call, 200.0 µs of them busy on the GPU")
    assert "aten::add_ ×100 per step" in f.evidence


def test_pageable_memcpy_evidence(tmp_path: Path) -> None:
    b = TraceBuilder()
    _copy_trace(b, "Memcpy HtoD (Pageable -> Device)")
    f = next(f for f in findings(b, tmp_path) if f.id == "pageable-memcpy")
    assert f.saving_us == pytest.approx(2000.0)
    assert "381.47 MiB per step staged through a bounce buffer" in f.evidence
    assert any("blocks the CPU 2.90 ms per step" in e for e in f.evidence)


def test_gpu_gaps_evidence(tmp_path: Path) -> None:
    b = TraceBuilder()
    with _gap_step(b):
        b.op("aten::nonzero", 1100, 4800)
    gaps = next(f for f in findings(b, tmp_path) if f.id == "gpu-gaps")
    # one 4.99 ms gap in a 9.98 ms active span: half of the 30 windows are under 50 % in use
    assert gaps.evidence[1].startswith("15 of 30 equal windows")
    assert "gap of 4.99 ms: CPU in aten::nonzero" in gaps.evidence


def test_gpu_gap_with_nothing_on_the_cpu_says_so(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        mm = b.op("aten::mm", 0, 10)
        b.launch(mm, "cudaLaunchKernel", 1, 5, kernel=GEMM_TC, k_ts=10, k_dur=1000)
        mm2 = b.op("aten::mm", 500, 10)  # queued early: the CPU records nothing in the gap
        b.launch(mm2, "cudaLaunchKernel", 501, 5, kernel=GEMM_TC, k_ts=6000, k_dur=3990)
    gaps = next(f for f in findings(b, tmp_path) if f.id == "gpu-gaps")
    # not "CPU in nothing recorded on the CPU"
    assert "gap of 4.99 ms: nothing recorded on the CPU meanwhile" in gaps.evidence


def _item_per_iteration(training: bool, closing_sync: bool = False) -> TraceBuilder:
    """A 10 ms step of five iterations: a 1 ms GEMM, then .item() waiting 985 µs for it;
    ``closing_sync``: then a bare torch.cuda.synchronize() of 800 µs ending the step."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        if closing_sync:
            b.runtime("cudaDeviceSynchronize", 9100, 800)
        for i in range(5):
            t = i * 2000
            mm = b.op("aten::mm", t, 10)
            b.launch(mm, "cudaLaunchKernel", t + 1, 5, kernel=GEMM_TC, k_ts=t + 10, k_dur=1000)
            item = b.op("aten::item", t + 20, 1000)
            b.runtime("cudaStreamSynchronize", t + 30, 985, owner=item)
            b.op("aten::empty", t + 1100, 5)
            if training:
                b.annotation("Optimizer.step#SGD.step", t + 1200, 5)
    return b


def test_host_sync_evidence(tmp_path: Path) -> None:
    f = next(f for f in findings(_item_per_iteration(True), tmp_path) if f.id == "host-sync")
    assert f.saving_us == pytest.approx(4925.0)  # 5 × 985 µs, under the 5 ms GPU idle
    # operators cover 5 × (10 + 1000 + 5) µs of CPU time; 4925 / 5075 = 97 %
    assert f.evidence[0] == ("5 synchronising calls per step block the CPU for 4.92 ms per "
                             "step (49.2 % of the step, 97 % of the time the CPU spends in "
                             "operators)")
    assert "caused by aten::item (5.0/step, 4.92 ms waiting per step)" in f.evidence
    assert ".item() / .cpu() / print(tensor) per step" in (f.code or "")


def test_host_sync_leaves_out_an_inference_harness_synchronize(tmp_path: Path) -> None:
    """Inference (aten operators, no backward pass, no optimizer step): a bare
    torch.cuda.synchronize() (cudaDeviceSynchronize outside any operator) after the step's
    last kernel launch is the harness waiting for the request (to read the clock, to
    return the result), not the model's stall. The .item() syncs inside operators stay
    counted, with inference's fix; in training the closing synchronize counts too."""
    f = next(f for f in findings(_item_per_iteration(False, closing_sync=True), tmp_path)
             if f.id == "host-sync")
    assert f.saving_us == pytest.approx(4925.0)  # 5 × 985 µs, the 800 µs left out
    assert ("not counted: 800.0 µs per step of torch.cuda.synchronize() ending the step "
            "outside any operator, after its last kernel launch (an inference harness waiting "
            "for the request to finish)") in f.evidence
    assert "non_blocking=True into pinned memory" in f.fix and "learning" not in f.fix
    assert "pin_memory=True" in (f.code or "") and "running_loss" not in (f.code or "")
    (tmp_path / "train").mkdir()
    t = next(f for f in findings(_item_per_iteration(True, closing_sync=True),
                                 tmp_path / "train") if f.id == "host-sync")
    assert not any(e.startswith("not counted") for e in t.evidence)
    assert t.evidence[0].startswith("6 synchronising calls per step block the CPU for 5.72 ms")


def test_operators_that_launch_nothing_on_any_device() -> None:
    from stepscope.classify.names import launches_nothing
    for name in ("aten::t", "aten::empty", "aten::result_type", "aten::unflatten_dense_tensors",
                 "TBackward", "TBackward0", "autograd::engine::evaluate_function: ViewBackward0"):
        assert launches_nothing(name), name
    for name in ("aten::zeros", "aten::to", "aten::mul", "AddBackward0", "SliceBackward0",
                 "autograd::engine::evaluate_function: ExpandBackward0", "torch::autograd::"
                 "AccumulateGrad"):
        assert not launches_nothing(name), name


def test_jit_compile_ranges_by_their_producers_names() -> None:
    """torch.compile's dynamo_timed phases, nvFuser's compile scopes and NVRTC are JIT
    compilation; the ranges a compiled run records at run time are not."""
    from stepscope.classify.names import is_jit_compile

    for name in ("compile_fx_inner (dynamo_timed)", "_compile.compile_inner (dynamo_timed)",
                 "KernelExecutor::compile", "FusionKernelRuntime::compileFusionParallel",
                 "FusionExecutorCache::getKernelRuntimeFor::compileNewKRT",
                 "executor_utils::NVRTC", "executor_utils::Nvrtc::CompileProgram",
                 "nvrtcCompileProgram"):
        assert is_jit_compile(name), name
    for name in ("Torch-Compiled Region: 0/0", "TorchDynamo Cache Lookup", "CompiledFunction",
                 "## Call CompiledFxGraph fx4 ##", "FusionExecutorCache::runFusionWithInputs",
                 "aten::mm", "compile"):
        assert not is_jit_compile(name), name


def test_gpu_gaps_leave_out_jit_compilation(tmp_path: Path) -> None:
    """The same gap as test_gpu_gaps_evidence, the CPU compiling (torch.compile's Inductor):
    paid once per graph, not host work to move off the path."""
    b = TraceBuilder()
    with _gap_step(b):
        b.annotation("compile_fx_inner (dynamo_timed)", 1100, 4800)
    assert "gpu-gaps" not in ids(findings(b, tmp_path))  # 0.19 ms left: under 5 %


def test_gpu_gaps_leave_out_a_kernels_first_launch(tmp_path: Path) -> None:
    """A 4.8 ms launch call with the GPU idle, the kernel's two later launches taking 5 µs:
    the module loaded at its first launch (lazy loading), not host work."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        _gap(b)
        first = b.op("aten::add", 1100, 4850)
        b.launch(first, "cudaLaunchKernel", 1110, 4800, kernel="add_kernel", k_ts=5950,
                 k_dur=10)
        for t in (5970, 5990):
            later = b.op("aten::add", t, 10)
            b.launch(later, "cudaLaunchKernel", t + 1, 5, kernel="add_kernel", k_ts=t + 20,
                     k_dur=10)
        _gap_end(b)
    assert "gpu-gaps" not in ids(findings(b, tmp_path))
    # the same gap filled by a CPU operator instead is host work: it fires
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        _gap(b)
        b.op("aten::nonzero", 1100, 4850)
        _gap_end(b)
    assert "gpu-gaps" in ids(findings(b, tmp_path))


def _gap_end(b: TraceBuilder) -> None:
    """The kernel that ends the gap at 6.02 ms and runs to the step's end."""
    mm2 = b.op("aten::mm", 6000, 10)
    b.launch(mm2, "cudaLaunchKernel", 6001, 5, kernel=GEMM_TC, k_ts=6020, k_dur=3970)


def test_gpu_gaps_ask_to_record_the_host_when_nothing_is(tmp_path: Path) -> None:
    """A gap the trace holds nothing for: the fix says how to record what runs there."""
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        _gap(b)
        mm2 = b.op("aten::mm", 500, 10)
        b.launch(mm2, "cudaLaunchKernel", 501, 5, kernel=GEMM_TC, k_ts=6000, k_dur=3990)
    gaps = next(f for f in findings(b, tmp_path) if f.id == "gpu-gaps")
    assert "The trace holds nothing on the host for 4.99 ms of the 4.99 ms counted per step" \
        in gaps.fix and "with_stack=True" in (gaps.code or "")


def test_cpu_ops_leave_out_operators_inside_a_compilation(tmp_path: Path) -> None:
    """Dynamo traces the model by running its operators (on fake tensors) inside its compile
    phases: CPU operators there are the compiler's, not work "to run on the GPU"."""
    b = TraceBuilder()
    with _gap_step(b):
        b.annotation("_compile.compile_inner (dynamo_timed)", 1100, 4820)
        b.op("aten::nonzero", 1110, 4800)
    fired = ids(findings(b, tmp_path))
    assert "cpu-ops-in-gpu-job" not in fired and "gpu-gaps" not in fired


def test_a_window_of_compilation_says_profile_after_it(tmp_path: Path) -> None:
    """Compile phases over a third of the window: warmup-in-window, LOW, with the outermost
    phase; under a quarter: silent."""
    for compile_us, fires in ((3500, True), (2000, False)):
        b = TraceBuilder()
        with b.step(1, 0, 10_000):
            b.annotation("_compile.compile_inner (dynamo_timed)", 100, compile_us)
            b.annotation("compile_fx_inner (dynamo_timed)", 200, compile_us - 200)
            healthy_tail = b.op("aten::mm", compile_us + 200, 10)
            b.launch(healthy_tail, "cudaLaunchKernel", compile_us + 201, 5, kernel=GEMM_TC,
                     k_ts=compile_us + 220, k_dur=9_700 - compile_us)
        f = next((f for f in findings(b, tmp_path) if f.id == "warmup-in-window"), None)
        assert (f is not None) == fires, compile_us
        if f is not None:
            assert f.severity == "low" and f.title.startswith("The profile is dominated by "
                                                              "compilation")
            assert f.evidence[0].startswith("JIT compilation runs 3.50 ms of the ")
            assert f.evidence[1] == ("outermost compile ranges: _compile.compile_inner "
                                     "(dynamo_timed) (3.50 ms)")
            assert "torch._dynamo.mark_dynamic" in f.fix and "schedule" in (f.code or "")


def test_a_real_torch_compile_first_call(tmp_path: Path) -> None:
    """Our own CPU capture of a compiled function's first call (tests/data/compile_cpu): the
    profiler names every compile phase "<phase> (dynamo_timed)"; the window is compilation."""
    from stepscope.formats import load_trace

    path = Path(__file__).parents[1] / "data" / "compile_cpu" / \
        "torch_compile_first_call.pt.trace.json.gz"
    fs = advise(run_analyses(load_trace(str(path), use_cache=False)), replay=False)
    assert ids(fs) == ["warmup-in-window"]
    f = fs[0]
    assert f.evidence[0].startswith("JIT compilation runs 201,157.13 ms of the 201,331.14 ms "
                                    "profiled (100 %)")
    assert f.evidence[1] == ("outermost compile ranges: _compile.compile_inner (dynamo_timed) "
                             "(201,157.13 ms)")


CAST_KERNEL = "void at::native::elementwise_kernel<128, 4>(int, copy_kernel_cuda)"


def _autocast_step(b: TraceBuilder, *, down: str = "15", concrete: bool = True,
                   matmul: str = "aten::linear", backward: bool = False,
                   loss: bool = False) -> None:
    """One 10 ms step of 8 layers: each ``matmul`` casts its float32 input to the dtype code
    ``down`` (15 bf16, 5 fp16) in an aten::to (300 µs kernel), then runs its GEMM (700 µs)."""
    with b.step(1, 0, 10_000):
        for i in range(8):
            t = 10 + i * 1000
            lin = b.op(matmul, t, 100)
            assert lin
            to = b.op("aten::to", t + 5, 40, input_types=["float", "Scalar", "Scalar", "Scalar",
                                                           ""],
                      concrete=["", down, "False", "False", ""] if concrete else None)
            assert to
            b.op("aten::_to_copy", t + 6, 38)
            cp = b.op("aten::copy_", t + 7, 36)
            b.launch(cp, "cudaLaunchKernel", t + 10, 5, kernel=CAST_KERNEL, k_ts=t + 200,
                     k_dur=300)
            mm = b.op("aten::addmm", t + 50, 40)
            b.launch(mm, "cudaLaunchKernel", t + 55, 5, kernel=GEMM_TC, k_ts=t + 500, k_dur=700)
        if backward:
            b.op("autograd::engine::evaluate_function: AddmmBackward0", 9_000, 10)
        if loss:
            b.op("aten::cross_entropy_loss", 9_100, 10)


def test_autocast_casts_in_inference(tmp_path: Path) -> None:
    b = TraceBuilder()
    _autocast_step(b)
    f = next(f for f in findings(b, tmp_path) if f.id == "autocast-casts")
    assert f.evidence[0] == ("casts between float32 and bf16 inside other operators: 2.40 ms of "
                             "kernels per step (30.0 % of GPU kernel time, 8 casts per step)")
    assert f.evidence[1] == "inside aten::linear (float → bf16): 2.40 ms per step (8 casts)"
    assert "inference" in f.evidence[-1]
    assert "model.to(torch.bfloat16).eval()" in (f.code or "")
    # the copies rule does not claim them too (they are inside another operator)
    assert "materialising-copies" not in ids(findings(b, tmp_path))


def test_autocast_casts_in_training_are_fused_not_dropped(tmp_path: Path) -> None:
    b = TraceBuilder()
    _autocast_step(b, down="5", backward=True)
    f = next(f for f in findings(b, tmp_path) if f.id == "autocast-casts")
    assert f.evidence[0].startswith("casts between float32 and fp16 inside other operators")
    assert "training" in f.evidence[-1] and "torch.compile fuses them" in f.fix
    assert 'torch.autocast("cuda", dtype=torch.float16)' in (f.code or "")


def test_autocast_casts_with_a_loss_and_no_backward_keep_autocast(tmp_path: Path) -> None:
    # an evaluation, or a training step cut before its backward: dropping autocast for a
    # bf16 model is an inference fix only; the casts are fused instead
    b = TraceBuilder()
    _autocast_step(b, loss=True)
    f = next(f for f in findings(b, tmp_path) if f.id == "autocast-casts")
    assert f.evidence[-1].startswith("a loss is computed (aten::cross_entropy_loss)")
    assert f.evidence[-1].endswith(": autocast stays, its casts can be fused")
    assert "torch.compile fuses them" in f.fix
    assert "model.to(torch.bfloat16).eval()" not in (f.code or "")


@pytest.mark.parametrize("case", ["no concrete inputs", "not a matmul", "to float64"])
def test_autocast_casts_need_their_premises(tmp_path: Path, case: str) -> None:
    """No recorded target dtype; a cast inside an operator autocast does not cast for (an
    fp16 model's own upcast, as rms_norm's); a cast to another dtype: silent."""
    b = TraceBuilder()
    _autocast_step(b, concrete=case != "no concrete inputs",
                   matmul="aten::rms_norm" if case == "not a matmul" else "aten::linear",
                   down="7" if case == "to float64" else "15")
    assert "autocast-casts" not in ids(findings(b, tmp_path))
