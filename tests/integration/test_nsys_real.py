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

from stepscope.analysis.nsys_stats import nsys_stats
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


@pytest.mark.parametrize("name", FUSER)
def test_nsys_rep_needs_nsys(name: str, capsys: pytest.CaptureFixture[str],
                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    rep = shared_trace(f"nsys/nvidia-fuser/{name}.nsys-rep")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("STEPSCOPE_DEBUG")
    assert main(["report", str(rep)]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "nsys export --type sqlite" in err
