"""Issue 9: exposed communication, warm-up, clock skew, graphs, devices, odd field types."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.builders import TraceBuilder

import stepscope
from stepscope.advice import advise
from stepscope.analysis.suite import run_analyses
from stepscope.cli.main import main
from stepscope.report.build import build_report

GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_kernel"
NCCL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"


def _comm_step(b: TraceBuilder, *, overlapped: bool, training: bool = True) -> None:
    """A 10 ms step: 4 ms of GEMMs, then 4 ms of all-reduce (alongside the GEMMs or after);
    ``training``: an optimizer step at its end."""
    with b.step(1, 0, 10_000):
        if training:
            b.annotation("Optimizer.step#SGD.step", 9_500, 100)
        for i in range(40):
            o = b.op("aten::mm", 10 + i * 20, 15)
            b.launch(o, "cudaLaunchKernel", 12 + i * 20, 5, kernel=GEMM, k_ts=1000 + i * 100,
                     k_dur=100)
        o = b.op("nccl:all_reduce", 900, 20)
        start = 1000 if overlapped else 5000
        b.launch(o, "cudaLaunchKernel", 905, 5, kernel=NCCL, k_ts=start, k_dur=4000, stream=9)


def test_exposed_communication_fires(tmp_path: Path) -> None:
    b = TraceBuilder()
    _comm_step(b, overlapped=False)
    a = run_analyses(b.load(tmp_path))
    assert a.communication is not None
    assert a.communication.exposed_per_step_ns == pytest.approx(4_000_000)
    assert a.communication.overlap_pct == pytest.approx(0.0)
    (f,) = [f for f in advise(a) if f.id == "exposed-communication"]
    # replayed (docs/whatif.md): the all-reduce no longer waits for the GEMMs; it starts
    # after its launch plus the trace's launch latency onto an idle stream (988 µs, the
    # first GEMM's): host 890 µs to the launch + 988 + 4000 µs, against 8990 µs replayed
    assert f.method == "replay"
    assert f.predicted_step_us == pytest.approx(890 + 988 + 4000)
    assert f.saving_us == pytest.approx(8990.0 - f.predicted_step_us)
    assert "4,000 µs" in f.estimate  # the rule's own bound, said beside it
    assert any("NCCL" in e for e in f.evidence)
    assert "bucket_cap_mb" in (f.code or "") and "no_sync" in (f.code or "")


def test_exposed_communication_in_inference_speaks_of_tensor_parallelism(
        tmp_path: Path) -> None:
    """Inference (no backward, no optimizer) has no gradients to bucket or accumulate."""
    b = TraceBuilder()
    _comm_step(b, overlapped=False, training=False)
    (f,) = [f for f in advise(run_analyses(b.load(tmp_path)))
            if f.id == "exposed-communication"]
    assert f.code is None and "tensor-parallel" in f.fix
    for word in ("DDP", "gradient", "no_sync", "FSDP"):
        assert word not in f.fix


def test_exposed_communication_silent_when_overlapped(tmp_path: Path) -> None:
    b = TraceBuilder()
    _comm_step(b, overlapped=True)
    a = run_analyses(b.load(tmp_path))
    assert a.communication is not None and a.communication.overlap_pct == pytest.approx(100.0)
    assert "exposed-communication" not in [f.id for f in advise(a)]


@pytest.mark.parametrize("kernel", [
    "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*)",
    "void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*)",
    "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*)",
])
def test_communication_outside_nccl_is_not_compute(tmp_path: Path, kernel: str) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        o = b.op("my_op", 10, 20)
        b.launch(o, "cudaLaunchKernel", 12, 5, kernel=kernel, k_ts=100, k_dur=5000,
                 **{"est. achieved occupancy %": 1.0, "blocks per SM": 0.1})
    data = build_report(b.load(tmp_path)).to_json()
    assert data["breakdown"]["avg_us"]["communication"] == pytest.approx(5000.0)
    assert data["breakdown"]["avg_us"]["kernel"] == 0.0
    assert data["communication"]["share_of_kernel_time_pct"] == 100.0
    assert "low-occupancy" not in [f["id"] for f in data["findings"]]


def _warm(b: TraceBuilder, stall_ms: float) -> None:
    """A 'first call' stall with the GPU idle, then steady work."""
    o = b.op("aten::conv2d", 0, stall_ms * 1000 + 100)
    b.launch(o, "cudaLaunchKernel", 10, stall_ms * 1000, kernel=GEMM,
             k_ts=stall_ms * 1000 + 20, k_dur=50)
    t0 = stall_ms * 1000 + 200
    for i in range(100):
        o = b.op("aten::mm", t0 + i * 100, 30)
        b.launch(o, "cudaLaunchKernel", t0 + i * 100 + 2, 5, kernel=GEMM,
                 k_ts=t0 + i * 100 + 10, k_dur=90)


def test_warmup_is_excluded_and_reported(tmp_path: Path) -> None:
    b = TraceBuilder()
    _warm(b, stall_ms=500)
    r = build_report(b.load(tmp_path))
    data = r.to_json()
    w = data["warmup"]
    assert w is not None and w["calls"] == ["cudaLaunchKernel"]
    assert w["duration_us"] == pytest.approx(500_010.0)
    # the steady state no longer says "runtime 98 %"
    assert data["breakdown"]["pct"]["runtime"] < 10
    assert data["breakdown"]["step_avg_us"] < 11_000
    assert "warmup-in-window" in [f.id for f in r.findings]


def test_no_warmup_below_threshold(tmp_path: Path) -> None:
    b = TraceBuilder()
    _warm(b, stall_ms=50)
    r = build_report(b.load(tmp_path))
    assert r.to_json()["warmup"] is None  # no stall: the steps keep it
    # but the 50 ms first launch (its later launches 5 µs) is 83 % of the window: the
    # finding is the first-call form, not the stall's
    f = next(f for f in r.findings if f.id == "warmup-in-window")
    assert f.title == "The profile is dominated by first calls (warm-up): profile after it"
    assert "1 first kernel launch takes 50.00 ms" in " ".join(f.evidence)


def _skewed(b: TraceBuilder, lead_us: float) -> None:
    with b.step(1, 0, 13_000):
        for i in range(10):
            o = b.op("aten::mm", 3100 + i * 900, 800)
            # the kernel "starts" lead_us before its launch call returns
            b.launch(o, "cudaLaunchKernel", 3110 + i * 900, 700, kernel=GEMM,
                     k_ts=3810 + i * 900 - lead_us, k_dur=50)


def test_clock_skew_warning(tmp_path: Path) -> None:
    b = TraceBuilder()
    _skewed(b, 2500)
    data = build_report(b.load(tmp_path)).to_json()
    sk = data["clock_skew"]
    assert sk is not None and sk["skewed_ops"] == 10 and sk["max_us"] == pytest.approx(2500.0)
    assert "launch delays" in sk["warning"]
    assert "launch-bound" in " ".join(sk["affected"])


def test_no_clock_skew_within_tolerance(tmp_path: Path) -> None:
    b = TraceBuilder()
    _skewed(b, 300)
    assert build_report(b.load(tmp_path)).to_json()["clock_skew"] is None


def test_graph_launch_counts_once_and_capture_only_is_labelled(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 10_000):
        o = b.op("CUDAGraph.replay", 10, 100)
        rt = b.runtime("cudaGraphLaunch", 20, 10, owner=o)
        for i in range(6):
            b.device_op(rt, GEMM, 100 + i * 100, 90)
        rt["args"]["External id"] = 10_000  # Kineto: the launch's own id, no op carries it
    data = build_report(b.load(tmp_path)).to_json()
    assert data["graphs"]["graph_launches"] == 1
    assert data["graphs"]["kernels_per_graph"] == 6.0
    assert data["launches"]["launches"] == 1
    assert data["graphs"]["capture_only"] is False
    # tied to the operator that replayed the graph, by containment
    assert data["graphs"]["operators"] == [{"name": "CUDAGraph.replay", "graph_launches": 1}]
    replay = [o for o in data["operators"] if o["name"] == "CUDAGraph.replay"]
    assert replay and replay[0]["device_self_us"] == pytest.approx(540.0)

    c = TraceBuilder()
    with c.step(1, 0, 10_000):
        o = c.op("aten::mm", 10, 100)
        c.runtime("cudaStreamBeginCapture", 5, 2)
        c.launch(o, "cudaLaunchKernel", 20, 5, kernel=GEMM, k_ts=30, k_dur=5)
        c.runtime("cudaStreamEndCapture", 9000, 2)
    data = build_report(c.load(tmp_path)).to_json()
    assert data["graphs"]["capture_only"] is True
    assert any("graph capture" in n for n in data["notes"])
    assert "gpu-gaps" not in [f["id"] for f in data["findings"]]


def test_rocm_device_ids_and_string_numbers(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.device_properties = [{"id": 0, "name": "AMD Instinct MI300X", "computeMajor": 9,
                            "computeMinor": 4, "numSms": 304}]
    with b.step(1, 0, 1000):
        o = b.op("aten::mm", 10, 100)
        b.launch(o, "hipLaunchKernel", 20, 5, kernel="Cijk_Alik_Bljk_MT64_MI16x16x1_SN",
                 k_ts=30, k_dur=500, device=2)
        cp = b.runtime("hipMemcpyAsync", 40, 5, owner=o)
        cp["args"]["bytes"] = "128"
    t = b.load(tmp_path)
    assert not t.meta.skipped
    assert any("args.bytes: string -> integer" in w for w in t.meta.warnings)
    assert any("matched" in n for n in t.meta.notes)
    data = build_report(t).to_json()
    assert [(d["id"], d["name"]) for d in data["devices"]] == [(2, "AMD Instinct MI300X")]
    assert data["gpu"][0]["tensor_core_pct"] == 100.0
    assert data["tensor_core_metric"] == "Tensor/matrix core share"


def test_compute_properties_header(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.device_properties = []
    doc_props = [{"id": 0, "name": "Tesla V100-DGXS-32GB", "major": 7, "minor": 0,
                  "multiProcessorCount": 80}]
    with b.step(1, 0, 1000):
        o = b.op("aten::mm", 10, 100)
        b.launch(o, "cudaLaunchKernel", 20, 5, kernel=GEMM, k_ts=30, k_dur=500)
    doc = b.document()
    del doc["deviceProperties"]
    doc["computeProperties"] = doc_props
    p = tmp_path / "old.json"
    p.write_text(json.dumps(doc))
    t = stepscope.load(str(p), cache=False)
    (d,) = t.meta.devices
    assert (d.name, d.compute_major, d.num_sms) == ("Tesla V100-DGXS-32GB", 7, 80)


def test_bom_is_accepted(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 1000):
        b.op("aten::add", 10, 100)
    p = tmp_path / "bom.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(b.document()).encode())
    assert len(stepscope.load(str(p), cache=False).host) == 2


def test_malformed_timestamp_is_named(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "ts.json.gz"
    p.write_bytes(gzip.compress(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "a", "ts": "abc", "dur": 1}]}).encode()))
    assert main(["report", "--no-cache", str(p)]) == 2
    err = capsys.readouterr().err
    assert "ts: dropped (not a number)" in err and len(err.strip().splitlines()) == 1


def test_runtime_only_trace_reports(tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    p = tmp_path / "rt.json"
    p.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 1, "tid": 1,
         "ts": 10 + i * 100, "dur": 20, "args": {"correlation": i}} for i in range(5)]}))
    assert main(["report", "--no-cache", "--format", "json", str(p)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert any("no device activity" in n for n in data["notes"])


ODD_VALUES = st.one_of(
    st.integers(-(2**40), 2**40), st.floats(allow_nan=False, allow_infinity=False),
    st.none(), st.booleans(), st.text(max_size=8),
    st.sampled_from(["128", "0x10", "1e3", " 7 ", "abc", "", "-1"]),
    st.lists(st.integers(0, 9), max_size=4),
)
ARG_KEYS = st.sampled_from(["bytes", "correlation", "External id", "device", "stream",
                            "registers per thread", "shared memory", "blocks per SM",
                            "est. achieved occupancy %", "grid", "block", "Input Dims"])


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(odd=st.dictionaries(ARG_KEYS, ODD_VALUES, min_size=1, max_size=4))
def test_odd_arg_types_never_drop_the_event(tmp_path: Path, odd: dict[str, Any]) -> None:
    """Whatever type an arg has, the kernel stays (coerced or the field dropped)."""
    b = TraceBuilder()
    with b.step(1, 0, 1000):
        o = b.op("aten::mm", 10, 100)
        _, k = b.launch(o, "cudaLaunchKernel", 20, 5, kernel=GEMM, k_ts=30, k_dur=500)
        k["args"].update(odd)
    t = b.load(tmp_path)
    assert len(t.device) == 1
    assert not t.meta.skipped


def test_loop_function_named_honestly_not_the_prof_step_line(tmp_path: Path) -> None:
    """torch 2.x: the frame running the loop is named with the prof.step() line."""
    b = TraceBuilder()
    b.op("train.py(99): train", 0, 120_000, cat="python_function")  # the whole capture
    for n in range(1, 4):
        t = n * 30_000
        with b.step(n, t, 29_000):
            b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 10, 20_000,
                 cat="user_annotation")
            b.op("data.py(40): decode", t + 20, 19_000, cat="python_function")
            b.op("aten::add", t + 20_100, 8_000)
    fs = advise(run_analyses(b.load(tmp_path)))
    (f,) = [f for f in fs if f.id == "input-pipeline"]
    assert f.source_lines
    line = f.source_lines[0]
    assert line.startswith("train.py: train() — the function running the loop")
    assert "line 99 is where profiling started" in line


@pytest.mark.parametrize("training", [True, False])
def test_input_pipeline_speaks_of_training_only_when_the_run_trains(tmp_path: Path,
                                                                    training: bool) -> None:
    """An inference loop (aten operators, no backward, no optimizer) that waits for its
    DataLoader is not told that "training" waits."""
    b = TraceBuilder()
    for n in range(1, 4):
        t = n * 30_000
        with b.step(n, t, 29_000):
            b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 10, 20_000,
                 cat="user_annotation")
            b.op("aten::add", t + 20_100, 8_000)
            if training:
                b.annotation("Optimizer.step#SGD.step", t + 28_200, 500)
    (f,) = [f for f in advise(run_analyses(b.load(tmp_path))) if f.id == "input-pipeline"]
    assert f.title.startswith("Training waits" if training else "The step waits")
    assert ("training" in f.fix) is training
    assert any(e.endswith("serially with training" if training else "serially with the model")
               for e in f.evidence)


def test_one_fetch_straddling_the_steps_reads_in_the_singular(tmp_path: Path) -> None:
    b = TraceBuilder()
    b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 25_000,
         cat="user_annotation")  # starts before the first step, ends inside it
    for n in range(1, 4):
        t = n * 20_000
        with b.step(n, t, 19_000):
            if n > 1:
                b.op("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t + 10,
                     12_000, cat="user_annotation")
            b.op("aten::add", t + 12_100, 6_000)
    (f,) = [f for f in advise(run_analyses(b.load(tmp_path))) if f.id == "input-pipeline"]
    assert any(e.startswith("1 fetch straddles the edge of the steps") for e in f.evidence)
