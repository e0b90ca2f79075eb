"""Nsight Compute CSV reader (details/raw pages, with and without preamble) and the join."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.nsys_builders import NsysBuilder

from stepscope.analysis.nsight.ncu_join import base_name, join_ncu
from stepscope.cli.main import main
from stepscope.errors import TraceFormatError
from stepscope.formats import load_trace
from stepscope.formats.nsight.ncu import load_ncu, read_ncu
from stepscope.report.build import build_report

REAL = Path(__file__).resolve().parent.parent / "data" / "ncu" / "superbench_cublaslt_ncu.log"
GEMM = ("cutlass3x_sm100_tensorop_s64x256x32gemm_f8_f8_f32_f16_f16_64x256x128_1x1x1_0_tnn_"
        "align4_1sm_bias_f16_relu_aux_scalemax")

IDS = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",' \
      '"Block Size","Grid Size","Device","CC"'
RAW = (
    IDS + ',"gpu__time_duration.sum","sm__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"dram__throughput.avg.pct_of_peak_sustained_elapsed",'
    '"sm__warps_active.avg.pct_of_peak_sustained_active","launch__registers_per_thread",'
    '"launch__shared_mem_per_block_static","launch__shared_mem_per_block_dynamic",'
    '"launch__occupancy_limit_registers","launch__occupancy_limit_warps",'
    '"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"\n'
    '"","","","","","","","","","","","usecond","%","%","%","register/thread","Kbyte/block",'
    '"byte/block","block","block","%"\n'
    '"0","1","train","h","void ampere_sgemm<float>(int, float*)","1","7","(256, 1, 1)",'
    '"(1,024, 1, 1)","0","8.0","1,234.5","71.2","12.5","48.0","128","2","1024","2","8","0"\n'
    '"1","1","train","h","elementwise_kernel","1","7","(128, 1, 1)","(80, 1, 1)","0","8.0",'
    '"3.5","5.1","60.0","20.0","16","0","0","16","16","n/a"\n'
)


def test_real_details_export_pinned() -> None:
    r = load_ncu(str(REAL))
    assert r.page == "details" and len(r.kernels) == 1
    k = r.kernels[0]
    assert k.name == GEMM
    assert (k.block, k.grid, k.device, k.compute_capability) == ("(384, 1, 1)", "(9, 32, 1)",
                                                                 0, "10.0")
    assert k.duration_ns == 406_240
    assert (k.sm_throughput_pct, k.memory_throughput_pct) == (23.59, 21.68)
    assert (k.dram_throughput_pct, k.l1_throughput_pct, k.l2_throughput_pct) == (0.74, 23.23,
                                                                                15.12)
    assert (k.achieved_occupancy_pct, k.theoretical_occupancy_pct) == (15.53, 18.75)
    assert k.occupancy_limiter == "registers, shared memory"
    assert (k.registers_per_thread, k.shared_memory_bytes) == (168, 205_696)
    assert len(k.rules) == 8
    speed = {(r.name, r.speedup_type): r.speedup_pct for r in k.rules}
    assert speed[("TheoreticalOccupancy", "local")] == 81.25
    assert speed[("LaunchConfiguration", "global")] == 50.0


def test_details_without_preamble_equals_with() -> None:
    text = REAL.read_text()
    body = text[text.index('"ID"'):]
    assert read_ncu(body.encode(), "x").kernels == read_ncu(text.encode(), "y").kernels


def test_raw_page_with_units_row() -> None:
    r = read_ncu(("==PROF== Disconnected from process 1\n" + RAW).encode(), "raw.csv")
    assert r.page == "raw" and [k.id for k in r.kernels] == [0, 1]
    a, b = r.kernels
    assert a.duration_ns == pytest.approx(1_234_500)
    assert a.sm_throughput_pct == 71.2 and a.dram_throughput_pct == 12.5
    assert a.achieved_occupancy_pct == 48.0 and a.registers_per_thread == 128
    assert a.shared_memory_bytes == 2000 + 1024
    assert a.occupancy_limiter == "registers" and a.tensor_pipe_pct == 0.0
    assert a.grid == "(1,024, 1, 1)"
    assert b.tensor_pipe_pct is None and b.occupancy_limiter == "registers, warps"


def test_old_details_layout_with_kernel_time() -> None:
    text = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Kernel Time",'
            '"Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"\n'
            '"0","7","a.out","h","k(int)","2021-Jan-01 10:00:00","1","7",'
            '"GPU Speed Of Light","Duration","msecond","1.50"\n'
            '"0","7","a.out","h","k(int)","2021-Jan-01 10:00:00","1","7",'
            '"GPU Speed Of Light","SM [%]","%","55.5"\n')
    k = read_ncu(text.encode(), "old.csv").kernels[0]
    assert k.duration_ns == pytest.approx(1_500_000) and k.sm_throughput_pct == 55.5
    assert k.block is None


@pytest.mark.parametrize("text", [
    "hello,world\n1,2\n",
    '"ID","Process ID","Process Name","Host Name","Kernel Name"\n',
    IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"\n"0","1"\n',
    IDS + ',"Section Name","Metric Name","Metric Unit","Metric Value"\n'
    '"x","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","8.0","S","Duration","ns","5"\n',
])
def test_malformed_csv_is_one_line_error(text: str) -> None:
    with pytest.raises(TraceFormatError) as err:
        read_ncu(text.encode(), "bad.csv")
    assert "bad.csv" in str(err.value) and "\n" not in str(err.value)


def test_base_name() -> None:
    assert base_name("void at::native::vectorized_elementwise_kernel<4, F>(int, F)") == \
        "vectorized_elementwise_kernel"
    assert base_name("ampere_sgemm") == "ampere_sgemm"


def _trace_with(tmp_path: Path, kernel: str) -> Path:
    b = NsysBuilder()
    for i in range(3):
        b.launch("cudaLaunchKernel", i * 1000, 10, kernel=kernel, k_ts=i * 1000 + 100,
                 k_dur=400)
    return b.write(tmp_path / "t.sqlite")


def test_join_by_name_and_saving(tmp_path: Path) -> None:
    trace = load_trace(str(_trace_with(tmp_path, f"void {GEMM}(Params)")), use_cache=False)
    join = join_ncu(load_ncu(str(REAL)), trace)
    row = join.rows[0]
    assert join.matched == 1 and row.trace_calls == 3 and row.trace_total_ns == 1200
    assert row.best_speedup_pct == 50.0  # global estimates only
    assert row.estimated_saving_ns == pytest.approx(600.0)
    data = build_report(trace, ncu=load_ncu(str(REAL))).to_json()
    assert data["ncu"]["kernels"][0]["trace"] == {"name": f"void {GEMM}(Params)", "calls": 3,
                                                  "total_us": 1.2}


def test_cli_ncu_alone_and_joined(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(REAL), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"]["format"] == "ncu" and data["ncu"]["kernels"][0]["name"] == GEMM
    assert data["ncu"]["matched"] is None  # no trace to match to: not "0 matched"
    assert main(["report", str(REAL)]) == 0
    alone = capsys.readouterr().out
    assert "Nsight Compute (" in alone and "matched to the trace" not in alone
    path = _trace_with(tmp_path, GEMM)
    assert main(["report", str(path), "--ncu", str(REAL), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["ncu"]["matched"] == 1 and data["nsys"] is not None
    assert main(["report", str(path), "--ncu", str(REAL)]) == 0
    assert "1 matched to the trace" in " ".join(capsys.readouterr().out.split())


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(0, 20_000), junk=st.text(max_size=40))
def test_fuzz_damaged_csv(cut: int, junk: str) -> None:
    text = REAL.read_text()[:cut] + junk
    try:
        r = read_ncu(text.encode(), "fz.csv")
    except TraceFormatError as exc:
        assert "\n" not in str(exc) and "fz.csv" in str(exc)
    else:
        assert all(k.name for k in r.kernels)


def test_join_to_a_pytorch_trace(tmp_path: Path) -> None:
    from tests.builders import TraceBuilder

    b = TraceBuilder()
    with b.step(1, 0, 1000):
        op = b.op("aten::mm", 10, 100)
        b.launch(op, "cudaLaunchKernel", 20, 5, kernel="void ampere_sgemm<float>(int, float*)",
                 k_ts=200, k_dur=300)
        b.launch(op, "cudaLaunchKernel", 40, 5, kernel="elementwise_kernel", k_ts=600,
                 k_dur=50)
    trace = b.load(tmp_path)
    join = join_ncu(read_ncu(RAW.encode(), "raw.csv"), trace)
    assert join.matched == 2
    sgemm, elem = join.rows
    assert (sgemm.trace_name, sgemm.trace_total_ns) == ("void ampere_sgemm<float>(int, float*)",
                                                        300_000)
    assert elem.trace_calls == 1 and sgemm.best_speedup_pct is None  # raw page: no rules
