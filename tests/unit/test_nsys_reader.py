"""The Nsight Systems SQLite reader on synthetic exports of old and new schemas."""

from __future__ import annotations

import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.nsys_builders import PID, TID, NsysBuilder

from stepscope.cli.main import main
from stepscope.errors import StepscopeError, TraceFormatError
from stepscope.formats import load_trace
from stepscope.formats.nsight.occupancy import estimated_occupancy
from stepscope.formats.nsight.sqlite import api_base_name, step_label
from stepscope.model.trace import (
    DEV_KERNEL,
    DEV_MEMCPY,
    DEV_MEMSET,
    HOST_ANNOTATION,
    MEM_PAGEABLE,
    NVTX_PUSHPOP,
    NVTX_STARTEND,
    DeviceProperties,
)

MANGLED = "_Z6kernelPfi"


def _export(variant: str) -> NsysBuilder:
    b = NsysBuilder(variant=variant)
    b.nvtx("ProfilerStep#1", 0, 10_000)
    b.nvtx("forward", 100, 5_000, registered=True, payload=42)
    b.nvtx("opt", 5_100, 9_000, style="startend", domain="mylib", end_tid=TID + 1)
    b.launch("cudaLaunchKernel_v7000", 200, 20, kernel="sgemm_kernel", k_ts=300, k_dur=1_000,
             grid=(132, 1, 1), block=(256, 1, 1), regs=64)
    b.launch("cuLaunchKernel", 400, 20, kernel=MANGLED, k_ts=1_400, k_dur=500,
             mangled=MANGLED)
    b.copy("cudaMemcpyAsync_v3020", 2_000, 800, c_ts=2_100, c_dur=600, src=MEM_PAGEABLE,
           dst=2, nbytes=1 << 20)
    corr = b.api("cudaMemsetAsync_v3020", 3_000, 10)
    b.memset(3_100, 50, corr=corr, mem_kind=2)
    corr = b.api("cudaStreamSynchronize_v3020", 3_200, 400)
    b.sync(3_300, 200, corr=corr)
    b.osrt("pthread_cond_wait", 4_000, 1_500)
    b.mark("a mark", 50)
    return b


@pytest.mark.parametrize("variant", ["old", "new"])
def test_reader_maps_every_table(tmp_path: Path, variant: str) -> None:
    path = _export(variant).write(tmp_path / f"{variant}.sqlite")
    t = load_trace(str(path), use_cache=False)
    assert t.meta.format == "nsys"
    assert t.meta.format_version == ("3.1.7" if variant == "old" else "3.17.1")
    dev = t.device
    assert dev.kind.tolist() == [DEV_KERNEL, DEV_KERNEL, DEV_MEMCPY, DEV_MEMSET]
    names = [t.name(int(n)) for n in dev.name]
    assert names == ["sgemm_kernel", "kernel(float*, int)", "Memcpy HtoD (Pageable -> Device)",
                     "Memset (Device)"]
    # the mangled name is kept beside the demangled one
    assert t.name(int(t.device_details.mangled[1])) == MANGLED
    assert t.device_details.src_kind[2] == MEM_PAGEABLE
    assert t.device_details.copy_kind.tolist() == [-1, -1, 1, -1]
    assert dev.bytes[2] == 1 << 20
    # launch config and occupancy from SM count: 132 blocks of 8 warps on 132 SMs
    assert dev.blocks_per_sm[0] == pytest.approx(1.0)
    assert dev.occupancy_pct[0] == pytest.approx(100 * 8 / 64)
    assert dev.registers[0] == 64 and dev.grid_x[0] == 132 and dev.block_x[0] == 256
    # API names lose their version suffix; pids/tids decoded from globalTid
    rt = t.runtime
    assert [t.name(int(n)) for n in rt.name] == [
        "cudaLaunchKernel", "cuLaunchKernel", "cudaMemcpyAsync", "cudaMemsetAsync",
        "cudaStreamSynchronize"]
    assert {t.name(int(p)) for p in rt.pid} == {str(PID)}
    assert {t.name(int(x)) for x in rt.tid} == {str(TID)}
    # correlation joins device ops to their call
    assert set(dev.correlation.tolist()) <= set(rt.correlation.tolist())
    assert len(t.syncs) == 1 and t.name(int(t.syncs.name[0])) == "Stream Sync"
    # NVTX: inline and registered strings, domains, styles; marks are not ranges
    nv = t.nvtx
    assert [t.name(int(n)) for n in nv.name] == ["ProfilerStep#1", "forward", "opt"]
    assert nv.style.tolist() == [NVTX_PUSHPOP, NVTX_PUSHPOP, NVTX_STARTEND]
    assert t.name(int(nv.domain[2])) == "mylib" and nv.domain[0] == -1
    assert nv.payload[1] == 42 and np.isnan(nv.payload[0])
    host = t.host
    assert (host.kind == HOST_ANNOTATION).all()
    assert [t.name(int(n)) for n in host.name] == ["ProfilerStep#1", "forward", "mylib:opt"]
    assert len(t.osrt) == 1 and t.osrt.dur[0] == 1_500
    d = t.meta.devices[0]
    assert (d.num_sms, d.compute_major, d.max_warps_per_sm) == (132, 9, 64)


def test_old_and_new_schemas_read_alike(tmp_path: Path) -> None:
    old = load_trace(str(_export("old").write(tmp_path / "o.sqlite")), use_cache=False)
    new = load_trace(str(_export("new").write(tmp_path / "n.sqlite")), use_cache=False)
    for table in ("device", "runtime", "nvtx", "osrt", "syncs"):
        a, b = getattr(old, table).columns(), getattr(new, table).columns()
        for col in ("ts", "dur"):
            np.testing.assert_array_equal(a[col], b[col])


def test_missing_columns_and_tables_are_tolerated(tmp_path: Path) -> None:
    b = NsysBuilder()
    b.launch("cudaLaunchKernel", 0, 10, kernel="k", k_ts=20, k_dur=30)
    b.nvtx("r", 0, 100)
    path = b.write(tmp_path / "d.sqlite", drop={
        "CUPTI_ACTIVITY_KIND_KERNEL": ["mangledName", "registersPerThread", "globalPid",
                                       "dynamicSharedMemory", "greenContextId"],
        "NVTX_EVENTS": ["domainId", "textId"],
        "TARGET_INFO_GPU": ["smCount", "maxWarpsPerSm"],
    })
    t = load_trace(str(path), use_cache=False)
    assert len(t.device) == 1 and t.device.registers[0] == -1
    assert np.isnan(t.device.blocks_per_sm[0])
    assert len(t.nvtx) == 1 and len(t.osrt) == 0 and len(t.syncs) == 0


def test_correlation_ids_are_per_process(tmp_path: Path) -> None:
    b = NsysBuilder()
    c1 = b.api("cudaLaunchKernel", 0, 10, pid=1, corr=5)
    b.kernel("a", 100, 10, corr=c1, pid=1)
    c2 = b.api("cudaLaunchKernel", 50, 10, pid=2, corr=5)
    b.kernel("b", 200, 10, corr=c2, pid=2)
    t = load_trace(str(b.write(tmp_path / "p.sqlite")), use_cache=False)
    rt_name = {int(c): t.name(int(n)) for c, n in zip(t.runtime.correlation, t.runtime.pid,
                                                      strict=True)}
    assert len(set(t.device.correlation.tolist())) == 2
    assert sorted(rt_name.values()) == ["1", "2"]


def test_cache_round_trip_keeps_nsys_tables(tmp_path: Path) -> None:
    path = str(_export("new").write(tmp_path / "c.sqlite"))
    first = load_trace(path)
    again = load_trace(path)
    assert len(again.nvtx) == len(first.nvtx) == 3
    assert again.meta.format == "nsys" and again.meta.devices == first.meta.devices
    np.testing.assert_array_equal(again.device_details.mangled, first.device_details.mangled)


def test_not_an_nsys_database(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    with pytest.raises(TraceFormatError, match="not an Nsight Systems export"):
        load_trace(str(path), use_cache=False)


def test_truncated_database_is_one_line_error(tmp_path: Path) -> None:
    good = _export("new").write(tmp_path / "g.sqlite").read_bytes()
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(good[: len(good) // 3])
    with pytest.raises(StepscopeError) as err:
        load_trace(str(bad), use_cache=False)
    assert "\n" not in str(err.value) and "bad.sqlite" in str(err.value)


def test_nsys_rep_without_nsys_says_how_to_export(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00" * 64)
    with pytest.raises(TraceFormatError, match="nsys export --type sqlite"):
        load_trace(str(rep), use_cache=False)


def test_names() -> None:
    assert api_base_name("cudaLaunchKernel_v7000") == "cudaLaunchKernel"
    assert api_base_name("cudaGetDeviceProperties_v2_v12000") == "cudaGetDeviceProperties_v2"
    assert api_base_name("cuLaunchKernel") == "cuLaunchKernel"
    assert step_label("ProfilerStep#7") == "7"
    assert step_label("stepscope:step 3") == "3"
    assert step_label("train_step_12") == "12"
    assert step_label("iteration 4") == "4"
    assert step_label("forward") is None


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(min_value=0, max_value=100_000), flip=st.integers(0, 255))
def test_fuzz_damaged_exports(tmp_path: Path, cut: int, flip: int) -> None:
    good = _export("new").write(tmp_path / "f.sqlite").read_bytes()
    data = bytearray(good[: max(16, min(cut, len(good)))])
    if len(data) > 200:
        data[100 + flip % (len(data) - 150)] ^= 0xFF
    bad = tmp_path / "fz.sqlite"
    bad.write_bytes(bytes(data))
    try:
        load_trace(str(bad), use_cache=False)
    except StepscopeError as exc:
        assert "\n" not in str(exc)


def test_nsys_rep_is_exported_with_nsys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in ``nsys`` on PATH: the report is exported to SQLite, then read."""
    export = _export("new").write(tmp_path / "exported.sqlite")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "nsys"
    fake.write_text(
        "#!/bin/sh\n"
        '[ "$1" = export ] || exit 9\n'
        'while [ $# -gt 0 ]; do [ "$1" = --output ] && out="$2"; shift; done\n'
        f'cp "{export}" "$out"\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:/usr/bin:/bin")
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00" * 64)
    t = load_trace(str(rep), use_cache=False)
    assert t.meta.path == str(rep) and t.meta.format == "nsys" and len(t.device) == 4
    fake.write_text("#!/bin/sh\necho 'cannot open report' >&2\nexit 3\n")
    with pytest.raises(TraceFormatError, match=r"nsys export failed \(cannot open report"):
        load_trace(str(rep), use_cache=False)


def test_gzipped_sqlite_export(tmp_path: Path) -> None:
    import gzip

    raw = _export("new").write(tmp_path / "e.sqlite").read_bytes()
    gz = tmp_path / "e.sqlite.gz"
    gz.write_bytes(gzip.compress(raw))
    t = load_trace(str(gz), use_cache=False)
    assert t.meta.format == "nsys" and len(t.device) == 4 and t.meta.path == str(gz)


def test_times_at_int64_limits_are_left_out(tmp_path: Path) -> None:
    # a corrupt cell (start near 2**63) overflowed the NVTX projection's packed key (an
    # internal error) and the idle analysis (numpy warnings on the terminal)
    b = NsysBuilder()
    b.nvtx("ProfilerStep#1", 0, 10_000)
    b.launch("cudaLaunchKernel_v7000", 200, 20, kernel="k_good", k_ts=300, k_dur=1_000)
    b.launch("cudaLaunchKernel_v7000", 400, 20, kernel="k_corrupt", k_ts=2**63 - 1_000,
             k_dur=500)
    b.api("cudaStreamSynchronize_v3020", -(2**63) + 1, 400)
    path = b.write(tmp_path / "s.sqlite")
    trace = load_trace(str(path), use_cache=False)
    assert [trace.name(int(i)) for i in trace.device.name] == ["k_good"]
    assert len(trace.runtime) == 2  # the two launches; the corrupt sync call is left out
    assert trace.meta.skipped == {  # and the user is told (the report's data notes)
        "CUPTI_ACTIVITY_KIND_KERNEL: start or end beyond ±2**61 ns (corrupt row)": 1,
        "CUPTI_ACTIVITY_KIND_RUNTIME: start or end beyond ±2**61 ns (corrupt row)": 1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["report", str(path), "--no-cache"]) == 0
    assert not [w for w in caught if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("warp_size", [-1024, -32, 0, 1 << 40])
def test_occupancy_with_a_corrupt_warp_size_reads_it_as_32(warp_size: int) -> None:
    # a negative warp size made the warps per block 0 and the block limit a division by
    # zero (a numpy warning on the terminal)
    def occupancy(warp: int) -> tuple[float, float]:
        dev = DeviceProperties(id=0, name="H100", total_memory=80 << 30, compute_major=9,
                               compute_minor=0, num_sms=132, max_threads_per_sm=2048,
                               warp_size=warp, max_warps_per_sm=64, max_blocks_per_sm=32)
        bps, occ = estimated_occupancy(
            (dev,), np.zeros(1, np.int32), np.array([264], np.int64),
            np.array([256], np.int64), np.array([32], np.int32), np.zeros(1, np.int64),
            np.ones(1, bool))
        return float(bps[0]), float(occ[0])

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert occupancy(warp_size) == occupancy(32) == (2.0, 25.0)
