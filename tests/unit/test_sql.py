"""stepscope sql / stepscope.sql on synthetic traces: names resolved, links, steps, the µs
columns, the output formats, one-line errors, and a query that cannot touch files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from tests.builders import TraceBuilder

import stepscope
from stepscope.cli.main import main
from stepscope.errors import TraceFormatError, UsageError
from stepscope.query.engine import open_input, run_sql
from stepscope.query.output import unique_names
from stepscope.query.schema import TABLES

pytest.importorskip("duckdb")


def _trace(tmp_path: Path) -> Path:
    b = TraceBuilder()
    for i, t0 in enumerate((0, 1000)):
        with b.step(i + 1, t0, 500):
            op = b.op("aten::mm", t0 + 10, 100)
            b.launch(op, "cudaLaunchKernel", t0 + 20, 5, kernel="sgemm", k_ts=t0 + 30,
                     k_dur=50)
            op2 = b.op("aten::add", t0 + 200, 50)
            b.launch(op2, "cudaLaunchKernel", t0 + 210, 5, kernel="add_kernel",
                     k_ts=t0 + 220, k_dur=7)
    return b.write(tmp_path)


def test_kernels_names_times_and_links(tmp_path: Path) -> None:
    path = _trace(tmp_path)
    rows = stepscope.sql(str(path), "SELECT name, count(*) AS n, sum(dur_ns) AS ns, "
                         "sum(dur_us) AS us FROM kernels GROUP BY name ORDER BY name").to_pylist()
    assert rows == [{"name": "add_kernel", "n": 2, "ns": 14000, "us": 14.0},
                    {"name": "sgemm", "n": 2, "ns": 100000, "us": 100.0}]
    linked = stepscope.sql(str(path), "SELECT device_op, runtime, op FROM links "
                           "ORDER BY device_op_id").to_pylist()
    assert linked == [{"device_op": "sgemm", "runtime": "cudaLaunchKernel", "op": "aten::mm"},
                      {"device_op": "add_kernel", "runtime": "cudaLaunchKernel",
                       "op": "aten::add"}] * 2
    # ts_us counts from the trace's first event; end_ns = ts_ns + dur_ns
    first = stepscope.sql(str(path), "SELECT min(ts_us) AS t, min(end_ns - ts_ns - dur_ns) "
                          "AS z FROM host_ops").to_pylist()[0]
    assert first == {"t": 0.0, "z": 0}


def test_copy_kinds_from_kineto_names(tmp_path: Path) -> None:
    b = TraceBuilder()
    with b.step(1, 0, 500):
        op = b.op("aten::copy_", 10, 100)
        b.launch(op, "cudaMemcpyAsync", 20, 5, kernel="Memcpy HtoD (Pageable -> Device)",
                 k_ts=30, k_dur=50, cat="gpu_memcpy", bytes=4096)
        b.launch(op, "cudaMemcpyAsync", 60, 5, kernel="Memcpy DtoH (Device -> Pinned)",
                 k_ts=90, k_dur=10, cat="gpu_memcpy", bytes=1024)
        b.launch(op, "hipMemcpyAsync", 70, 5, kernel="Memcpy HtoD (Host -> Device)",
                 k_ts=120, k_dur=10, cat="gpu_memcpy", bytes=8)
    rows = stepscope.sql(str(b.write(tmp_path)), "SELECT copy_kind, src_memory, dst_memory, "
                         "bytes, gb_per_s FROM memcpy ORDER BY ts_ns").to_pylist()
    assert rows == [
        {"copy_kind": "HtoD", "src_memory": "pageable", "dst_memory": "device", "bytes": 4096,
         "gb_per_s": 4096 / 50_000},
        {"copy_kind": "DtoH", "src_memory": "device", "dst_memory": "pinned", "bytes": 1024,
         "gb_per_s": 1024 / 10_000},
        # ROCm writes "Host": pageable or pinned is not recorded
        {"copy_kind": "HtoD", "src_memory": None, "dst_memory": "device", "bytes": 8,
         "gb_per_s": 8 / 10_000}]


def test_steps_and_a_trace_object(tmp_path: Path) -> None:
    trace = stepscope.load(str(_trace(tmp_path)))
    steps = stepscope.sql(trace, "SELECT step, device_ops FROM steps ORDER BY step").to_pylist()
    assert steps == [{"step": "1", "device_ops": 2}, {"step": "2", "device_ops": 2}]


def test_steps_table_links_the_trace_once(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """find_steps and find_warmup share the table's Links (the warm-up check built its own:
    a second pass over every runtime call)."""
    from stepscope.analysis.events import links

    built = []
    real = links.Links.__init__

    def counted(self: links.Links, *args: object, **kwargs: object) -> None:
        built.append(1)
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    b = TraceBuilder()  # a 200 ms synchronize in an idle first step: the warm-up check
    with b.step(1, 0, 300_000):  # asks whether it waits on queued work (the links)
        b.runtime("cudaDeviceSynchronize", 1000, 200_000)
        op = b.op("aten::mm", 250_000, 100)
        b.launch(op, "cudaLaunchKernel", 250_010, 5, kernel="sgemm", k_ts=250_020, k_dur=50)
    with b.step(2, 300_000, 1000):
        op = b.op("aten::mm", 300_010, 100)
        b.launch(op, "cudaLaunchKernel", 300_020, 5, kernel="sgemm", k_ts=300_030, k_dur=50)
    monkeypatch.setattr(links.Links, "__init__", counted)
    trace = stepscope.load(str(b.write(tmp_path)))
    assert stepscope.sql(trace, "SELECT count(*) AS n FROM steps").to_pylist() == [{"n": 2}]
    assert len(built) == 1


def test_every_documented_column_is_built(tmp_path: Path) -> None:
    """The views have exactly the columns schema.py documents, in its order."""
    inp = open_input(str(_trace(tmp_path)))
    for table in inp.tables:
        got = run_sql(inp, f"SELECT * FROM {table.name} LIMIT 0").column_names
        assert got == [c.name for c in table.columns], table.name
    assert {t.name for t in inp.tables} == {t.name for t in TABLES} - {"nvtx", "layers"}


def test_event_columns_are_the_models_arrays(tmp_path: Path) -> None:
    """Zero copy: the Arrow columns DuckDB scans are the trace's numpy arrays themselves
    (memory-mapped from the cache on a re-open), names their string ids."""
    path = str(_trace(tmp_path))
    stepscope.load(path)  # fill the cache: the next open memory-maps it
    inp = open_input(path)
    trace = inp.parts[0][1].trace  # type: ignore[union-attr]
    runtime = inp.arrow("runtime")
    for column, array in (("ts_ns", trace.runtime.ts), ("dur_ns", trace.runtime.dur),
                          ("correlation", trace.runtime.correlation)):
        assert runtime.column(column).chunk(0).buffers()[1].address == array.ctypes.data
    names = runtime.column("name").chunk(0)
    assert names.indices.buffers()[1].address == trace.runtime.name.ctypes.data


def _one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_bad_query_is_one_line_exit_2(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_trace(tmp_path))
    assert main(["sql", path, "SELECT nme FROM kernels"]) == 2
    assert "Referenced column \"nme\" not found" in _one_line(capsys)
    assert main(["sql", path, "SELECT * FROM kernel"]) == 2
    assert 'no table kernel: did you mean "kernels"?' in _one_line(capsys)
    assert main(["sql", path]) == 2
    assert "give a query after the path" in _one_line(capsys)
    assert main(["sql", path, "SELECT 1", "--format", "parquet"]) == 2
    assert "--out" in _one_line(capsys)
    out = str(tmp_path / "i.parquet")
    assert main(["sql", path, "SELECT INTERVAL 1 DAY AS i", "--format", "parquet",
                 "--out", out]) == 2
    assert "--format parquet: Unhandled type" in _one_line(capsys)
    assert not os.path.exists(out)


def test_repeated_column_names_are_made_unique(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """A self-join's SELECT * repeats names: the text table failed (IndexError), the CSV
    rows were shorter than its header and a JSON row kept one column of each name."""
    path = str(_trace(tmp_path))
    query = "SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS a"
    assert unique_names(run_sql(open_input(path), query)).column_names == [
        "a", "a_1", "a_1_1", "a_2"]
    assert main(["sql", path, query, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"a": 1, "a_1": 2, "a_1_1": 3, "a_2": 4}]
    assert main(["sql", path, query, "--format", "csv"]) == 0
    assert capsys.readouterr().out == "a,a_1,a_1_1,a_2\n1,2,3,4\n"
    self_join = "SELECT * FROM kernels k1, kernels k2 LIMIT 1"
    assert main(["sql", path, self_join]) == 0
    assert "(1 row)" in capsys.readouterr().out


def test_queries_cannot_touch_files(tmp_path: Path) -> None:
    inp = open_input(str(_trace(tmp_path)))
    for query in (f"SELECT * FROM read_csv('{tmp_path}/x.csv')",
                  f"COPY (SELECT 1) TO '{tmp_path}/out.csv'",
                  "SET enable_external_access = true"):
        with pytest.raises(UsageError, match=r"^SQL: "):
            run_sql(inp, query)
    assert not (tmp_path / "out.csv").exists()


def test_no_progress_bar_on_stdout(tmp_path: Path) -> None:
    """DuckDB draws a progress bar on stdout for a query over 2 s: inside the JSON or CSV
    that `stepscope sql` writes there (seen on a 10 M-kernel export under load). DuckDB
    turns it off by itself under pytest, so the command runs in a process of its own."""
    path = str(_trace(tmp_path))
    env = {**os.environ, "PYTHONPATH": str(Path(stepscope.__file__).parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", "from stepscope.cli.main import entry_point; entry_point()",
         "sql", path, "SELECT current_setting('enable_progress_bar') AS bar", "--format",
         "json"], capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"bar": False}]


def test_not_an_input(tmp_path: Path) -> None:
    snap = tmp_path / "snap.pickle"
    snap.write_bytes(b"\x80\x04N.")
    with pytest.raises(TraceFormatError, match="a CUDA memory snapshot, not an input of "
                       "stepscope sql"):
        open_input(str(snap))


def test_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(_trace(tmp_path))
    query = "SELECT name, sum(dur_ns) AS ns FROM kernels GROUP BY 1 ORDER BY 1"
    assert main(["sql", path, query, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"name": "add_kernel", "ns": 14000},
                                                   {"name": "sgemm", "ns": 100000}]
    assert main(["sql", path, query, "--format", "csv"]) == 0
    assert capsys.readouterr().out == "name,ns\nadd_kernel,14000\nsgemm,100000\n"
    assert main(["sql", path, query]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0].split() == ["name", "ns"] and text[-1] == "(2 rows)"
    out = tmp_path / "k.parquet"
    assert main(["sql", path, query, "--format", "parquet", "--out", str(out)]) == 0
    assert pq.read_table(out).to_pylist()[1] == {"name": "sgemm", "ns": 100000}
    assert main(["sql", path, "--schema", "--format", "json"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert {"table": "kernels", "column": "dur_us", "type": "DOUBLE",
            "doc": "duration, µs"} in schema
