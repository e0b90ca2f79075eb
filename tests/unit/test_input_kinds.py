"""formats.kinds: the one place that says what an input is, in its documented order."""

from __future__ import annotations

import gzip
import json
import pickle
import sqlite3
from pathlib import Path

import pytest

from stepscope.errors import TraceSourceError
from stepscope.formats import kinds
from stepscope.formats.kinds import content_kind, identify

KINETO = b'{"schemaVersion": 1, "traceEvents": []}'


@pytest.mark.parametrize(("head", "name", "kind"), [
    (b"", "x.json", kinds.EMPTY),
    (b" \n\t ", "x.json", kinds.EMPTY),
    (b"SQLite format 3\x00" + b"\x00" * 80, "x.json", kinds.NSYS_SQLITE),  # content, not name
    (pickle.dumps({"segments": []}, protocol=4), "snap.json", kinds.MEMORY_SNAPSHOT),
    (b'==PROF== Connected to process 1\n"ID","Process ID"', "k.csv", kinds.NCU_CSV),
    (b'"ID","Process ID","Process Name","Host Name"\n', "k.txt", kinds.NCU_CSV),
    (b"==PROF== Connected", "k.json", kinds.UNKNOWN),  # ncu only under its export names
    (b'{"schema": "stepscope.report/1", "source": {}}', "r.json", kinds.SAVED_REPORT),
    (b'{"schema": "stepscope.diff/1"}', "d.json", kinds.SAVED_DIFF),
    (b'{"schema": "stepscope.tensorrt-diff/1"}', "d.json", kinds.SAVED_DIFF),
    (b'{"schema": "stepscope.monitor/1", "verdict": {}}', "monitor.json", kinds.MONITOR),
    (b'[{"count": 10}, {"name": "conv1", "timeMs": 1.0, "averageMs": 0.1}]', "p.json",
     kinds.TRTEXEC),
    (b"&&&& RUNNING TensorRT.trtexec [TensorRT v8601] # trtexec --onnx=m.onnx\n", "t.log",
     kinds.TRTEXEC),
    (b"[[1000, 2, 64, 4]]", "t.raw.json", kinds.MEMORY_TIMELINE),
    (b"[\n  [1000, 2, 64, 4]\n]", "t.json", kinds.MEMORY_TIMELINE),
    (b"<html><body>memory</body></html>", "t.html", kinds.MEMORY_TIMELINE),
    (KINETO, "t.json", kinds.KINETO),
    (b"\xef\xbb\xbf" + KINETO, "t.json", kinds.KINETO),  # a UTF-8 BOM
    (b'[\n  {"ph": "X", "name": "a", "ts": 1, "dur": 2}]', "bare.json", kinds.KINETO),
    (b"hello", "x.txt", kinds.UNKNOWN),
])
def test_content_kinds_in_order(head: bytes, name: str, kind: kinds.Kind) -> None:
    assert content_kind(head, name) is kind


def test_every_kind_is_listed_once_and_names_its_pipelines() -> None:
    assert len({k.name for k in kinds.KINDS}) == len(kinds.KINDS)
    commands = {kinds.REPORT, kinds.DIFF, kinds.MEMORY, kinds.VIEW, kinds.SQL}
    assert all(set(k.pipelines) <= commands for k in kinds.KINDS)
    assert kinds.KINETO.pipeline(kinds.REPORT) == "trace"
    assert kinds.MEMORY_SNAPSHOT.pipeline(kinds.REPORT) is None
    assert kinds.TRACE_FOLDER.pipeline(kinds.REPORT) == "ranks"
    assert kinds.TRACE_FOLDER.pipeline(kinds.DIFF) == "folder"
    # stepscope sql: what report reads as a trace, a run or an engine, it queries the same way
    assert kinds.TRACE_FOLDER.pipeline(kinds.SQL) == kinds.RANK_FILES.pipeline(kinds.SQL) == "ranks"
    assert kinds.TRTEXEC.pipeline(kinds.SQL) == "tensorrt"
    assert kinds.MEMORY_SNAPSHOT.pipeline(kinds.SQL) is None


def test_identify_paths(tmp_path: Path) -> None:
    trace = tmp_path / "a.pt.trace.json"
    trace.write_bytes(KINETO)
    gz = tmp_path / "b.json.gz"
    gz.write_bytes(gzip.compress(KINETO))
    assert identify(str(trace)) is kinds.KINETO
    assert identify([str(gz)]) is kinds.KINETO  # inflated before it is judged
    assert identify([str(trace), str(gz)]) is kinds.RANK_FILES
    assert identify(str(tmp_path)) is kinds.TRACE_FOLDER
    assert identify(str(tmp_path / "x.nsys-rep")) is kinds.NSYS_REPORT  # by name: binary
    assert identify(str(tmp_path / "m.engine")) is kinds.TRT_ENGINE
    db = tmp_path / "run.sqlite"
    sqlite3.connect(db).execute("create table t (x)").connection.commit()
    assert identify(str(db)) is kinds.NSYS_SQLITE
    engine = tmp_path / "engine"
    engine.mkdir()
    (engine / "profile.json").write_text(json.dumps(
        [{"count": 10}, {"name": "conv1", "timeMs": 1.0, "averageMs": 0.1}]))
    assert identify(str(engine)) is kinds.TRTEXEC
    with pytest.raises(TraceSourceError, match="no such file"):
        identify(str(tmp_path / "missing.json"))


def test_identify_urls() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    fs.pipe("/kinds/run/r0.pt.trace.json", KINETO)
    fs.pipe("/kinds/profile.json", b'[{"count": 1}, {"name": "c", "timeMs": 1, "averageMs": 1}]')
    assert identify("memory://kinds/run/r0.pt.trace.json") is kinds.KINETO
    assert identify("memory://kinds/run/") is kinds.TRACE_FOLDER
    # an engine's outputs are read from a local folder: a remote one goes to the trace reader
    assert identify("memory://kinds/profile.json") is kinds.REMOTE_TRTEXEC
    assert kinds.REMOTE_TRTEXEC.pipeline(kinds.REPORT) == "trace"


def test_refusal_names_the_command_that_takes_it() -> None:
    msg = kinds.refusal(kinds.MEMORY_SNAPSHOT, "s.pickle", kinds.VIEW)
    assert msg == ("s.pickle: a CUDA memory snapshot, not an input of stepscope view "
                   "(use: stepscope memory)")


def test_logdir_names() -> None:
    assert kinds.listed_name("worker0.1700000000.pt.trace.json.gz")
    assert kinds.listed_name("run.sqlite")
    assert not kinds.listed_name("notes.md")
    assert not kinds.listed_name("snapshot.pickle")


def test_monitor_file_is_not_a_rank(tmp_path: Path) -> None:
    """``stepscope run --monitor`` writes monitor.json beside the traces: never a rank, never
    listed on the dashboard."""
    from stepscope.io.listing import list_traces

    (tmp_path / "h_1.123.pt.trace.json").write_text("{}")
    (tmp_path / "monitor.json").write_text('{"schema": "stepscope.monitor/1"}')
    assert list_traces(str(tmp_path)) == [str(tmp_path / "h_1.123.pt.trace.json")]
    assert not kinds.listed_name("monitor.json")
    assert kinds.listed_name("h_1.123.pt.trace.json")


def test_view_refuses_a_file_it_cannot_show(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    """`view notes.txt` started a server on "No traces found"; now one line, exit 2."""
    from stepscope.cli.main import main

    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    assert main(["view", str(notes)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("notes.txt: a file stepscope cannot read, not an input of stepscope view")
