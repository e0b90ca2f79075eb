"""Issue 25 items 4 and 10: a malformed file is one line naming it, or its odd field is
tolerated; a field we don't need never rejects a file; a bad row is skipped and counted."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.builders import TraceBuilder, kineto_text
from tests.nsys_builders import NsysBuilder

from stepscope.cli.main import main
from stepscope.errors import TraceFormatError
from stepscope.formats import load_trace


def _cli(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["report", "--no-cache", str(path)])
    return code, capsys.readouterr().err


def _ok_or_one_line(path: Path, capsys: pytest.CaptureFixture[str]) -> int:
    code, err = _cli(path, capsys)
    assert code in (0, 2), err
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and str(path) in lines[0], err
    return code


def _events() -> list[dict[str, Any]]:
    b = TraceBuilder()
    with b.step(1, 0, 100):
        op = b.op("aten::mm", 1, 5)
        b.launch(op, "cudaLaunchKernel", 2, 1, kernel="gemm_kernel", k_ts=20, k_dur=5)
    return b.events


# --- Kineto --------------------------------------------------------------------------------

def test_invalid_utf8_in_device_properties(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    text = kineto_text(_events(), {"schemaVersion": 1, "deviceProperties": [
        {"id": 0, "name": "NVIDIA H100", "numSms": 132}]})
    path = tmp_path / "t.json"
    path.write_bytes(text.replace(b"NVIDIA H100", b"NVIDIA \xff\xfe H100"))
    assert _ok_or_one_line(path, capsys) == 0
    t = load_trace(str(path), use_cache=False)
    assert t.meta.devices[0].num_sms == 132  # the rest of the entry is kept


def test_invalid_utf8_in_a_name_on_the_slow_path(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    evs = _events()
    # a string where a number belongs, before the bad bytes: the per-event repair path
    evs[0]["args"]["External id"] = "2"
    path = tmp_path / "t.json"
    path.write_bytes(kineto_text(evs, {"schemaVersion": 1}).replace(b"gemm_kernel",
                                                                    b"gemm\xff\xc3_kernel"))
    assert _ok_or_one_line(path, capsys) == 0
    names = {load_trace(str(path), use_cache=False).name(int(n))
             for n in load_trace(str(path), use_cache=False).device.name}
    assert any(n.startswith("gemm") and n.endswith("_kernel") for n in names)


@pytest.mark.parametrize("value", ['"1"', "1.5", "null", '{"a": 1}', "[1]", '"x"'])
def test_schema_version_of_any_type_is_tolerated(tmp_path: Path, value: str) -> None:
    path = tmp_path / "t.json"
    text = kineto_text(_events(), {"schemaVersion": 1})
    path.write_bytes(text.replace(b'"schemaVersion": 1', f'"schemaVersion": {value}'.encode()))
    t = load_trace(str(path), use_cache=False)
    assert int((t.device.kind >= 0).sum()) == 1


# --- Nsight Systems ------------------------------------------------------------------------

def _nsys(tmp_path: Path, *sql: str, params: tuple[Any, ...] = ()) -> Path:
    b = NsysBuilder()
    b.nvtx("ProfilerStep#1", 0, 10_000)
    b.launch("cudaLaunchKernel_v7000", 200, 20, kernel="sgemm_kernel", k_ts=300, k_dur=1_000,
             grid=(132, 1, 1), block=(256, 1, 1), regs=64)
    b.osrt("pthread_cond_wait", 4_000, 1_500)
    path = b.write(tmp_path / "s.sqlite")
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE ANALYSIS_DETAILS (startTime INTEGER, stopTime INTEGER)")
    con.execute("INSERT INTO ANALYSIS_DETAILS VALUES (0, 20000)")
    con.execute("CREATE TABLE DIAGNOSTIC_EVENT (severity INTEGER, text TEXT)")
    con.execute("INSERT INTO DIAGNOSTIC_EVENT VALUES (2, 'CPU sampling was disabled')")
    for i, stmt in enumerate(sql):
        con.execute(stmt, params if i == len(sql) - 1 else ())
    con.commit()
    con.close()
    return path


TOLERATED = {
    "empty StringIds": ("DELETE FROM StringIds",),
    "missing kernel name": ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 999",),
    "kernel name 2^31": ("UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 2147483648",),
    "os call name 2^40": ("UPDATE OSRT_API SET nameId = 1099511627776",),
    "text gpu id": ("UPDATE TARGET_INFO_GPU SET id = 'gpu0'",),
    "text sm count": ("UPDATE TARGET_INFO_GPU SET smCount = 'many'",),
    "blob gpu name": ("UPDATE TARGET_INFO_GPU SET name = X'FFFE'",),
    "text cuda gpuId": ("INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES ('x', 0, 1)",),
    "text severity": ("UPDATE DIAGNOSTIC_EVENT SET severity = 'bad'",),
    "text start time": ("UPDATE ANALYSIS_DETAILS SET startTime = 'yesterday'",),
    "blob string": ("UPDATE StringIds SET value = X'FF00' WHERE id = 0",),
}


@pytest.mark.parametrize("case", list(TOLERATED))
def test_nsys_odd_cells_are_tolerated(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      case: str) -> None:
    path = _nsys(tmp_path, *TOLERATED[case])
    assert _ok_or_one_line(path, capsys) == 0, case


def test_nsys_unknown_name_ids_are_unnamed_and_counted(tmp_path: Path) -> None:
    path = _nsys(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET demangledName = 2147483648")
    t = load_trace(str(path), use_cache=False)
    assert len(t.device) == 1 and t.name(int(t.device.name[0])) == ""
    assert any("not in StringIds" in w for w in t.meta.warnings)


@pytest.mark.parametrize("ts", [2**63 - 1, 2**63 - 1000, -(2**63)])
def test_nsys_timestamps_near_the_int64_limits(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str],
                                               ts: int) -> None:
    path = _nsys(tmp_path, "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = ?", params=(ts,))
    _ok_or_one_line(path, capsys)


def test_nsys_flipped_bytes_in_the_schema_page(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    clean = _nsys(tmp_path).read_bytes()
    for i in range(100, 4096, 7):
        data = bytearray(clean)
        data[i] ^= 0x5A
        path = tmp_path / "flip.sqlite"
        path.write_bytes(bytes(data))
        _ok_or_one_line(path, capsys)


def test_nsys_string_ids_far_from_dense_are_one_line(tmp_path: Path) -> None:
    path = _nsys(tmp_path, "INSERT INTO StringIds VALUES (2147483648, 'far')")
    with pytest.raises(TraceFormatError, match=r"s\.sqlite"):
        load_trace(str(path), use_cache=False)


# --- Nsight Compute CSV --------------------------------------------------------------------

NCU = (
    '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
    '"Block Size","Grid Size","Device","CC","gpu__time_duration.sum"\n'
    '"","","","","","","","","","","","usecond"\n'
    '"0","1","train","h","gemm_a","1","7","(256, 1, 1)","(8, 1, 1)","0","8.0","12.5"\n'
    '"1","1","train","h","gemm_b","1","7","(256, 1, 1)","(8, 1, 1)","0","8.0","3.5"\n'
)


@pytest.mark.parametrize("bad", ['"2","1","train"', '"x2","1","train","h","gemm_c","1","7",'
                                 '"(1, 1, 1)","(1, 1, 1)","0","8.0","1.0"'])
def test_ncu_ragged_row_is_skipped_and_counted(tmp_path: Path, bad: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    from stepscope.formats.nsight.ncu import load_ncu

    path = tmp_path / "k.csv"
    path.write_text(NCU + bad + "\n")
    r = load_ncu(str(path))
    assert [k.name for k in r.kernels] == ["gemm_a", "gemm_b"]
    assert [k.duration_ns for k in r.kernels] == [12_500, 3_500]
    assert sum(r.skipped.values()) == 1
    code, err = _cli(path, capsys)
    assert code == 0, err
    code = main(["report", "--no-cache", "--format", "json", str(path)])
    import json

    source = json.loads(capsys.readouterr().out)["source"]
    assert sum(source["skipped"].values()) == 1 and source["partial"] is True


def test_ncu_only_bad_rows_is_one_line(tmp_path: Path) -> None:
    from stepscope.formats.nsight.ncu import load_ncu

    path = tmp_path / "k.csv"
    path.write_text(NCU.split('"0","1"')[0] + '"0","1","train"\n')
    with pytest.raises(TraceFormatError, match=r"without any kernel row .*cut short"):
        load_ncu(str(path))


def test_nsys_text_that_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A table name in sqlite_master or a string with bytes that are not UTF-8."""
    path = _nsys(tmp_path, "UPDATE StringIds SET value = CAST(X'73676566FF6D6D' AS TEXT) "
                           "WHERE value = 'sgemm_kernel'")
    assert _ok_or_one_line(path, capsys) == 0
    data = bytearray(path.read_bytes())
    at = data.index(b"CUPTI_ACTIVITY_KIND_KERNEL")
    data[at] = 0x80  # the table's name in the schema page
    path.write_bytes(bytes(data))
    _ok_or_one_line(path, capsys)


@pytest.mark.parametrize(("value", "warned"), [('"1"', False), ("null", False), ("1.5", True),
                                               ("[1]", True)])
def test_schema_version_warning(tmp_path: Path, value: str, warned: bool) -> None:
    path = tmp_path / "t.json"
    text = kineto_text(_events(), {"schemaVersion": 1})
    path.write_bytes(text.replace(b'"schemaVersion": 1', f'"schemaVersion": {value}'.encode()))
    t = load_trace(str(path), use_cache=False)
    assert t.meta.schema_version is None
    assert any("schemaVersion" in w for w in t.meta.warnings) is warned
