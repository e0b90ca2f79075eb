"""Real Nsight Systems exports (NVIDIA/Fuser, H200): load, report, and the nsys stats
summaries equal plain SQL over the same tables."""

from __future__ import annotations

import json
import re
import sqlite3
import statistics
from pathlib import Path

import pytest
from tests.conftest import shared_trace

from stepscope.analysis.nsight.stats import nsys_stats
from stepscope.cli.main import main
from stepscope.formats import load_trace
from stepscope.report.build import build_report

FUSER = ("a049892_report1", "ce15be9_report1", "ce15be9_report2")


def _sqlite(name: str) -> Path:
    return shared_trace(f"nsys/nvidia-fuser/{name}.sqlite")


def _sql_groups(path: Path, sql: str) -> dict[str, list[int]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    out: dict[str, list[int]] = {}
    for name, value in con.execute(sql):
        out.setdefault(name, []).append(int(value))
    con.close()
    return out


def _check(rows: list, groups: dict[str, list[int]]) -> None:  # type: ignore[type-arg]
    assert {r.name for r in rows} == set(groups)
    grand = sum(sum(v) for v in groups.values())
    for r in rows:
        v = groups[r.name]
        assert r.count == len(v)
        assert r.total == sum(v)
        assert r.min == min(v) and r.max == max(v)
        assert r.med == pytest.approx(statistics.median(v))
        assert r.avg == pytest.approx(sum(v) / len(v))
        assert r.stddev == pytest.approx(statistics.stdev(v) if len(v) > 1 else 0.0)
        if grand:
            assert r.time_pct == pytest.approx(100 * sum(v) / grand)


@pytest.mark.parametrize("name", FUSER)
def test_summaries_equal_sql(name: str) -> None:
    path = _sqlite(name)
    s = nsys_stats(load_trace(str(path), use_cache=False))
    api = _sql_groups(path, "SELECT s.value, r.end - r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
                            "JOIN StringIds s ON s.id = r.nameId")
    stripped: dict[str, list[int]] = {}
    for k, v in api.items():
        stripped.setdefault(re.sub(r"_v\d+$", "", k), []).extend(v)
    _check(s.cuda_api_sum, stripped)
    _check(s.cuda_gpu_kern_sum, _sql_groups(
        path, "SELECT s.value, k.end - k.start FROM CUPTI_ACTIVITY_KIND_KERNEL k "
              "JOIN StringIds s ON s.id = k.demangledName"))
    labels = ("'[CUDA memcpy ' || CASE copyKind WHEN 1 THEN 'Host-to-Device' WHEN 2 THEN "
              "'Device-to-Host' WHEN 8 THEN 'Device-to-Device' END || ']'")
    mem_time = _sql_groups(path, f"SELECT {labels}, end - start FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                                 "UNION ALL SELECT '[CUDA memset]', end - start "
                                 "FROM CUPTI_ACTIVITY_KIND_MEMSET")
    _check(s.cuda_gpu_mem_time_sum, mem_time)
    mem_size = _sql_groups(path, f"SELECT {labels}, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY "
                                 "UNION ALL SELECT '[CUDA memset]', bytes "
                                 "FROM CUPTI_ACTIVITY_KIND_MEMSET")
    assert {r.name: r.total for r in s.cuda_gpu_mem_size_sum} == {
        k: sum(v) for k, v in mem_size.items()}
    _check(s.nvtx_sum, _sql_groups(
        path, "SELECT coalesce(text, (SELECT value FROM StringIds WHERE id = textId)), "
              "end - start FROM NVTX_EVENTS WHERE eventType = 59 AND end IS NOT NULL"))


def test_pinned_figures_a049892() -> None:
    s = nsys_stats(load_trace(str(_sqlite("a049892_report1")), use_cache=False))
    api = {r.name: r for r in s.cuda_api_sum}
    assert api["cudaLaunchKernel"].count == 9
    assert api["cudaLaunchKernel"].total == 24_889_522
    assert api["cudaMemcpyAsync"].max == 21_451_776
    assert api["cuGetProcAddress"].count == 838
    k = s.cuda_gpu_kern_sum[0]
    assert (k.name, k.total) == ("nvjet_tst_192x192_64x4_2x1_v_bz_coopB_TNN", 2_187_752)
    assert sum(r.count for r in s.cuda_gpu_kern_sum) == 18
    mem = {r.name: r for r in s.cuda_gpu_mem_time_sum}
    assert mem["[CUDA memcpy Host-to-Device]"].total == 21_356_533
    assert mem["[CUDA memset]"].count == 3
    size = {r.name: r.total for r in s.cuda_gpu_mem_size_sum}
    assert size["[CUDA memcpy Host-to-Device]"] == 394_002_434
    assert sum(r.count for r in s.nvtx_sum) == 13_513
    proj = {r.name: r for r in s.nvtx_gpu_proj_sum}
    top = proj["FusionExecutorCache::runFusionWithInputs"]
    assert (top.instances, top.total_gpu_ops, top.total_proj_ns) == (2, 8, 8_906_750)
    assert s.osrt_sum == []


def test_capture_window() -> None:
    t = load_trace(str(_sqlite("a049892_report1")), use_cache=False)
    assert t.meta.window_start is not None and t.meta.window_end is not None
    assert t.meta.window_start <= int(t.device.ts.min())
    assert int(t.device.end.max()) <= t.meta.window_end


def test_kernel_mangled_names_kept() -> None:
    s = nsys_stats(load_trace(str(_sqlite("a049892_report1")), use_cache=False))
    fused = [r for r in s.cuda_gpu_kern_sum if "nvfuser_inner_persistent_f1" in r.name]
    assert fused and fused[0].mangled is not None and fused[0].mangled.startswith("_ZN")
    assert fused[0].name.startswith("<unnamed>::nvfuser_inner_persistent_f1")


@pytest.mark.parametrize("name", FUSER)
def test_every_export_reports(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = _sqlite(name)
    assert main(["report", str(path), "--format", "json", "--no-cache"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["source"]["format"] == "nsys"
    assert data["nsys"]["cuda_gpu_kern_sum"] and data["nsys"]["nvtx_sum"]
    assert data["nsys"]["export"]["schema_version"] in ("3.16.1", "3.17.1")
    assert data["devices"][0]["name"] == "NVIDIA H200"
    diagnostics = data["nsys"]["export"]["diagnostics"]
    expected = ("warning: CUDA profiling might have not been started correctly. (x10)"
                if name == "a049892_report1" else
                "error: Unable to configure the collection of CPU IP/backtrace samples")
    assert any(d.startswith(expected) for d in diagnostics)
    assert main(["report", str(path), "--no-cache"]) == 0
    assert "CUDA API summary" in capsys.readouterr().out


def test_pageable_memcpy_found_on_real_export() -> None:
    report = build_report(load_trace(str(_sqlite("a049892_report1")), use_cache=False))
    ids = {f.id for f in report.findings}
    assert "pageable-memcpy" in ids  # 394 MB HtoD from pageable memory
    assert "gpu-gaps" in ids


def test_schema_reference_loads_empty() -> None:
    path = shared_trace("nsys/schema-reference/nsys-2023.4.4-schema-3.7.2-all-tables-empty.sqlite")
    t = load_trace(str(path), use_cache=False)
    assert t.meta.format_version == "3.7.2"
    assert len(t.device) == len(t.runtime) == len(t.nvtx) == 0
    assert t.meta.warnings  # says there is no CUDA trace
    data = build_report(t).to_json()
    assert data["findings"] == [] and data["nsys"]["cuda_api_sum"] == []
    assert data["source"]["warnings"] == ["no CUDA trace in this export (profile with -t cuda)"]


def test_empty_export_is_not_called_a_cpu_profile(capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace("nsys/schema-reference/nsys-2023.4.4-schema-3.7.2-all-tables-empty.sqlite")
    assert main(["report", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "0 events · unknown · nothing recorded" in out
    assert "no events at all: the trace recorded nothing to analyse" in out
    assert "CPU profile" not in out and "CPU only" not in out


@pytest.mark.parametrize("name", FUSER)
def test_nsys_rep_needs_nsys(name: str, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rep = shared_trace(f"nsys/nvidia-fuser/{name}.nsys-rep")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("STEPSCOPE_DEBUG")
    assert main(["report", str(rep)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nsys export --type sqlite" in err


def _insert(con: sqlite3.Connection, table: str, **values: object) -> None:
    """A row with every column of the real table: given values, else 0 (NOT NULL-safe)."""
    cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
    row = {c: values.get(c, 0) for c in cols}
    unknown = set(values) - set(cols)
    assert not unknown, f"{table} has no {unknown}"
    con.execute(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                [row[c] for c in cols])


def test_real_2023_4_schema_with_rows(tmp_path: Path) -> None:
    """Rows written into the real (data-free) 2023.4 schema, every column present."""
    src = shared_trace("nsys/schema-reference/nsys-2023.4.4-schema-3.7.2-all-tables-empty.sqlite")
    path = tmp_path / "filled.sqlite"
    path.write_bytes(src.read_bytes())
    con = sqlite3.connect(path)
    gpid, gtid = (1 << 48) | (77 << 24), (1 << 48) | (77 << 24) | 78
    for i, s in enumerate(["cudaLaunchKernel_v7000", "my_kernel", "poll", "cudaMemcpy_v3020"]):
        _insert(con, "StringIds", id=1000 + i, value=s)
    _insert(con, "TARGET_INFO_GPU", id=0, name="NVIDIA A100", smCount=108, threadsPerWarp=32,
            maxWarpsPerSm=64, computeMajor=8, computeMinor=0, totalMemory=40 << 30)
    _insert(con, "CUPTI_ACTIVITY_KIND_RUNTIME", start=100, end=110, eventClass=0,
            globalTid=gtid, correlationId=5, nameId=1000)
    _insert(con, "CUPTI_ACTIVITY_KIND_KERNEL", start=200, end=900, globalPid=gpid,
            correlationId=5, demangledName=1001, shortName=1001, mangledName=None,
            gridX=216, gridY=1, gridZ=1, blockX=128, blockY=1, blockZ=1, registersPerThread=40,
            streamId=7)
    _insert(con, "CUPTI_ACTIVITY_KIND_RUNTIME", start=1000, end=1500, eventClass=0,
            globalTid=gtid, correlationId=6, nameId=1003)
    _insert(con, "CUPTI_ACTIVITY_KIND_MEMCPY", start=1100, end=1400, globalPid=gpid,
            correlationId=6, bytes=1 << 20, copyKind=2, srcKind=2, dstKind=0, streamId=7)
    _insert(con, "NVTX_EVENTS", start=50, end=2000, eventType=59, text="step 1",
            globalTid=gtid, textId=None, domainId=0, endGlobalTid=None)
    _insert(con, "OSRT_API", start=2100, end=2600, eventClass=27, globalTid=gtid, nameId=1002)
    con.commit()
    con.close()
    t = load_trace(str(path), use_cache=False)
    assert t.meta.format_version == "3.7.2"
    assert [t.name(int(n)) for n in t.device.name] == ["my_kernel",
                                                       "Memcpy DtoH (Device -> Pageable)"]
    assert t.device.blocks_per_sm[0] == pytest.approx(2.0)
    assert t.meta.devices[0].num_sms == 108
    assert [t.name(int(n)) for n in t.runtime.name] == ["cudaLaunchKernel", "cudaMemcpy"]
    assert len(t.nvtx) == 1 and len(t.osrt) == 1 and t.osrt.dur[0] == 500
    report = build_report(t)
    assert report.analyses.steps.profiler_steps
    s = report.analyses.nsys
    assert s is not None and s.osrt_sum[0].name == "poll"
    assert s.nvtx_gpu_proj_sum[0].total_gpu_ops == 2


def test_gpu_gaps_leave_out_nvfuser_compilation() -> None:
    """nvFuser's first run: its compile scopes (KernelExecutor::compile, NVRTC, …) fill the
    gaps; they are warm-up, and the gaps the trace records nothing for ask to record more."""
    report = build_report(load_trace(str(_sqlite("a049892_report1")), use_cache=False))
    gaps = next(f for f in report.findings if f.id == "gpu-gaps")
    assert ("834.21 ms per step of the gaps is JIT compilation (torch.compile, nvFuser or "
            "NVRTC ranges), paid once per graph or shape, not counted") in gaps.evidence
    assert gaps.evidence[0].endswith("2,300.06 ms of it is not data loading, synchronisation, "
                                     "compilation or first calls")
    # a 1.6 s gap holding one 0.26 ms cudaMalloc is not "CPU in cudaMalloc"
    assert ("gap of 1,628.90 ms: nothing recorded on the CPU for most of it (the longest call "
            "in it: cudaMalloc, 261.7 µs)") in gaps.evidence
    assert "record what runs there first (CPU sampling, OS runtime calls" in gaps.fix
    assert "nsys profile --sample=cpu --trace=cuda,nvtx,osrt" in (gaps.code or "")


def test_a_window_of_nvfuser_compilation_says_profile_after_it() -> None:
    """ce15be9: nvFuser's compileFusion takes 61 % of the capture; the fix is nsys's own
    capture range (cudaProfilerApi), not torch.profiler's schedule or torch.compile's."""
    report = build_report(load_trace(str(_sqlite("ce15be9_report1")), use_cache=False))
    f = next(f for f in report.findings if f.id == "warmup-in-window")
    assert f.title == "The profile is dominated by compilation: profile after it"
    assert f.evidence == (
        "JIT compilation runs 392.92 ms of the 644.66 ms profiled (61 %): the profile measures "
        "the compiler, not the compiled model",
        "outermost compile ranges: KernelExecutor::compileFusion (392.92 ms)")
    assert "--capture-range=cudaProfilerApi" in f.fix and "mark_dynamic" not in f.fix
    assert "cudaProfilerStart" in (f.code or "")
