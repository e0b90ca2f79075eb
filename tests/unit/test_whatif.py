"""What-if transforms on small synthetic traces: the replayed step before and after each
(docs/whatif.md), in µs; the CLI's contract (stepscope.whatif/1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.builders import TID, TraceBuilder

from stepscope.analysis.events.links import Links
from stepscope.analysis.graph.fixes import RULE_TRANSFORMS, transform_for
from stepscope.analysis.graph.transforms import parse
from stepscope.analysis.graph.whatif import WindowReplay, what_if
from stepscope.analysis.graph.window import Window
from stepscope.cli.main import main
from stepscope.errors import UsageError

US = 1000
DL = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def _replay(b: TraceBuilder, tmp_path: Path, *specs: str) -> WindowReplay:
    t = b.load(tmp_path)
    return what_if(t, Links(t), [Window("w", 0, 10_000 * US)], tuple(parse(s) for s in specs))


def _steps(r: WindowReplay) -> tuple[float, float]:
    return r.before.step_ns / US, r.after.step_ns / US


def _dataloader(b: TraceBuilder) -> None:
    b.annotation(DL, 0, 500)
    o = b.op("aten::mm", 510, 50)
    b.launch(o, "cudaLaunchKernel", 520, 5, kernel="k", k_ts=530, k_dur=100)


def test_drop_dataloader_wait(tmp_path: Path) -> None:
    b = TraceBuilder()
    _dataloader(b)
    r = _replay(b, tmp_path, "drop_dataloader_wait")
    assert _steps(r) == (630.0, 130.0)  # everything moves 500 µs earlier
    assert r.touched == (1,)
    assert r.before.by_category_ns["data_loading"] == 500 * US
    assert r.after.by_category_ns["data_loading"] == 0


def _synced(b: TraceBuilder) -> None:
    """Launch a 170 µs kernel at 10, wait for it in cudaStreamSynchronize (20-205), then
    a 20 µs operator; the outer range ends at 230."""
    o = b.op("aten::step", 0, 230)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel="k", k_ts=30, k_dur=170)
    b.runtime("cudaStreamSynchronize", 20, 185, owner=o)
    b.op("aten::after", 206, 20)


def test_drop_sync(tmp_path: Path) -> None:
    b = TraceBuilder()
    _synced(b)
    r = _replay(b, tmp_path, "drop_sync")
    # the host no longer waits: it ends at 20 + 1 + 20 + 4 = 45 µs; the kernel still ends
    # at 200 µs and bounds the step
    assert _steps(r) == (230.0, 200.0)
    assert r.touched == (1,)
    assert r.before.by_category_ns["sync"] == 5 * US  # the call's time after the kernel


def test_drop_sync_pattern_filters_by_name(tmp_path: Path) -> None:
    b = TraceBuilder()
    _synced(b)
    r = _replay(b, tmp_path, "drop_sync:_local_scalar_dense")
    assert r.touched == (0,) and _steps(r) == (230.0, 230.0)


def test_async_h2d(tmp_path: Path) -> None:
    """A pageable copy call blocks the host 190 µs; made asynchronous it costs what a
    launch costs (5 µs); the copy itself keeps its 170 µs on the stream."""
    b = TraceBuilder()
    o = b.op("aten::to", 0, 216)
    rt = b.runtime("cudaMemcpyAsync", 10, 190, owner=o)
    b.device_op(rt, "Memcpy HtoD (Pageable -> Device)", 20, 170, cat="gpu_memcpy")
    b.launch(o, "cudaLaunchKernel", 210, 5, kernel="k", k_ts=215, k_dur=50)
    r = _replay(b, tmp_path, "async_h2d")
    # the kernel now waits for the copy (ends at 190) instead of the host: 190 + 50
    assert _steps(r) == (265.0, 240.0)
    assert r.touched == (1,)


def _one_kernel(b: TraceBuilder, name: str) -> None:
    o = b.op("aten::mm", 0, 50)
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel=name, k_ts=30, k_dur=100)


def test_scale_kernels_by_pattern(tmp_path: Path) -> None:
    b = TraceBuilder()
    _one_kernel(b, "my_gemm_kernel")
    r = _replay(b, tmp_path, "scale_kernels:gemm=0.5")
    assert _steps(r) == (130.0, 80.0)
    assert r.touched == (1,)


def test_scale_kernels_tensor_core_preset(tmp_path: Path) -> None:
    b = TraceBuilder()
    _one_kernel(b, "volta_sgemm_128x64_nn")
    r = _replay(b, tmp_path, "scale_kernels:tensor_cores")
    assert _steps(r) == (130.0, 80.0)  # FP32 GEMM off the Tensor Cores: x 0.5


def test_scale_kernels_leaves_tensor_core_gemms(tmp_path: Path) -> None:
    b = TraceBuilder()
    _one_kernel(b, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_kernel")
    r = _replay(b, tmp_path, "scale_kernels:tensor_cores")
    assert r.touched == (0,) and _steps(r) == (130.0, 130.0)


def test_remove_launch_overhead(tmp_path: Path) -> None:
    """Three 15 µs launches of 2 µs kernels inside a 100 µs operator."""
    b = TraceBuilder()
    o = b.op("aten::small", 0, 100)
    for i in range(3):
        b.launch(o, "cudaLaunchKernel", 10 + 20 * i, 15, kernel="k", k_ts=25 + 20 * i,
                 k_dur=2)
    r = _replay(b, tmp_path, "remove_launch_overhead")
    # host: 10 + (0 + 5) x 2 + 0 + 35 = 55 µs; the launch calls took 45
    assert _steps(r) == (100.0, 55.0)
    assert r.touched == (3,)


def test_fuse_elementwise(tmp_path: Path) -> None:
    b = TraceBuilder()
    o = b.op("aten::add", 0, 40)
    k = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel=k, k_ts=20, k_dur=30)
    b.launch(o, "cudaLaunchKernel", 30, 5, kernel=k, k_ts=52, k_dur=30)
    r = _replay(b, tmp_path, "fuse_elementwise")
    assert _steps(r) == (82.0, 80.0)  # the 2 µs gap between them goes: one kernel
    assert r.touched == (1,)


def test_fuse_elementwise_leaves_the_optimizer_step(tmp_path: Path) -> None:
    # compiling the model does not fuse the optimizer's kernels: fuse_optimizer's
    b = TraceBuilder()
    step = b.annotation("Optimizer.step#AdamW.step", 0, 45)
    assert step["cat"] == "user_annotation"
    o = b.op("aten::add_", 1, 40)
    k = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>"
    b.launch(o, "cudaLaunchKernel", 10, 5, kernel=k, k_ts=20, k_dur=30)
    b.launch(o, "cudaLaunchKernel", 30, 5, kernel=k, k_ts=52, k_dur=30)
    r = _replay(b, tmp_path, "fuse_elementwise")
    assert r.touched == (0,) and _steps(r)[0] == _steps(r)[1]
    assert _replay(b, tmp_path, "fuse_optimizer").touched == (1,)


def test_overlap_comm(tmp_path: Path) -> None:
    """A 100 µs GEMM, then a 100 µs all-reduce on stream 9 that started after it."""
    b = TraceBuilder()
    o = b.op("aten::mm", 0, 13)
    b.launch(o, "cudaLaunchKernel", 10, 2, kernel="sgemm", k_ts=20, k_dur=100)
    c = b.op("nccl:all_reduce", 14, 6)
    b.launch(c, "cudaLaunchKernel", 15, 3, kernel="ncclDevKernel_AllReduce_Sum_f32_RING_LL",
             k_ts=120, k_dur=100, stream=9)
    r = _replay(b, tmp_path, "overlap_comm")
    before, after = _steps(r)
    assert before == 220.0
    # the all-reduce starts after its launch plus the trace's launch latency (10 µs, the
    # GEMM's): the launch call starts at 14 (the collective's host range costs nothing
    # now), the kernel at 24, ends at 124
    assert after == 124.0
    assert r.touched == (2,)  # the host range and the kernel


def test_transforms_compose(tmp_path: Path) -> None:
    b = TraceBuilder()
    _dataloader(b)
    r = _replay(b, tmp_path, "drop_dataloader_wait", "scale_kernels:^k$=0.5")
    assert _steps(r) == (630.0, 80.0)
    assert r.touched == (1, 1)


@pytest.mark.parametrize("spec", ["bogus", "scale_kernels:x", "scale_kernels:x=0",
                                  "scale_kernels:(=2", "drop_dataloader_wait:x"])
def test_bad_transforms_are_refused(spec: str) -> None:
    with pytest.raises(UsageError):
        parse(spec)


def test_every_rule_maps_to_a_valid_transform() -> None:
    from stepscope.advice.rules import RULES

    for rule, spec in RULE_TRANSFORMS.items():
        assert rule in RULES
        parse(spec)
    assert transform_for("input-pipeline") == "drop_dataloader_wait"
    assert transform_for("drop_sync") == "drop_sync"


def test_cli_json_contract(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 700):
        _dataloader(b)
    path = b.write(tmp_path)
    assert main(["whatif", str(path), "--apply", "input-pipeline", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["schema"] == "stepscope.whatif/1"
    assert doc["windows"] == ["ProfilerStep#1"]
    assert doc["before"]["step_us"] == 630.0 and doc["after"]["step_us"] == 130.0
    assert set(doc["before"]["by_category_us"]) == {
        "cpu", "gpu_compute", "launch_overhead", "kernel_to_kernel", "sync", "communication",
        "data_loading", "other"}
    assert doc["applied"] == [{"apply": "input-pipeline", "transform": "drop_dataloader_wait",
                               "events": 1}]
    assert doc["saving_us"] == 500.0


def test_cli_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b = TraceBuilder()
    _dataloader(b)
    path = b.write(tmp_path)
    assert main(["whatif", str(path), "--apply", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown transform 'nope'" in err
    assert main(["whatif", str(path), "--apply", "drop_sync", "--window", "missing#0"]) == 2
    assert "--window 'missing#0'" in capsys.readouterr().err


def test_fuse_optimizer_only_fuses_kernels_of_the_optimizer_step(tmp_path: Path) -> None:
    b = TraceBuilder()
    o = b.op("aten::mul", 0, 10)
    b.launch(o, "cudaLaunchKernel", 2, 5, kernel="mul_kernel", k_ts=10, k_dur=10)
    b.launch(o, "cudaLaunchKernel", 8, 1, kernel="mul_kernel", k_ts=25, k_dur=10)
    step = b.annotation("Optimizer.step#SGD.step", 40, 40)
    del step
    for i in range(3):
        o = b.op("aten::add_", 42 + 10 * i, 8)
        b.launch(o, "cudaLaunchKernel", 43 + 10 * i, 5, kernel="add_kernel",
                 k_ts=50 + 12 * i, k_dur=10)
    r = _replay(b, tmp_path, "fuse_optimizer")
    # the two optimizer kernels after the first join it (gaps of 2 µs go); the host's
    # launch calls inside the step cost nothing: the GPU ends at 50 + 30 = 80
    assert r.touched == (2,)
    assert _steps(r) == (84.0, 80.0)


def test_fuse_optimizer_reads_the_launching_thread_s_step(tmp_path: Path) -> None:
    # another thread's optimizer range, begun during this thread's step, does not hide
    # the step from its own launches (intervals.within_ranges: per thread)
    b = TraceBuilder()
    b.annotation("Optimizer.step#SGD.step", 40, 40)
    b.annotation("Optimizer.step#SGD.step", 41, 1, tid=TID + 1)
    for i in range(3):
        o = b.op("aten::add_", 42 + 10 * i, 8)
        b.launch(o, "cudaLaunchKernel", 43 + 10 * i, 5, kernel="add_kernel",
                 k_ts=50 + 12 * i, k_dur=10)
    assert _replay(b, tmp_path, "fuse_optimizer").touched == (2,)  # 2 join the first


def test_remove_launch_overhead_keeps_a_first_launch(tmp_path: Path) -> None:
    """A 3 ms launch is module loading, not overhead: it stays."""
    b = TraceBuilder()
    o = b.op("aten::first", 0, 3100)
    b.launch(o, "cudaLaunchKernel", 10, 3000, kernel="k", k_ts=3015, k_dur=2)
    b.launch(o, "cudaLaunchKernel", 3020, 15, kernel="k", k_ts=3040, k_dur=2)
    r = _replay(b, tmp_path, "remove_launch_overhead")
    assert r.touched == (1,)
    assert _steps(r) == (3100.0, 3085.0)
