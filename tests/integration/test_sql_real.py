"""stepscope sql on real traces: kernel counts and totals equal the raw files (Kineto events
counted with json, nsys CUPTI_ACTIVITY_KIND_KERNEL rows with sqlite3), a run of ranks has its
rank column, and every query of docs/sql.md runs on the input it names."""

from __future__ import annotations

import gzip
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT, shared_trace

from stepscope.cli.main import main
from stepscope.query.engine import Input, open_input, run_sql

pytest.importorskip("duckdb")

KINETO = ["kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz",
          "outside/tracelens-h100-qwen/Qwen_Qwen1.5-0.5B-Chat__1016005.json.gz",
          "hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"]
NSYS = ["nsys/nvidia-fuser/a049892_report1.sqlite", "nsys/nvidia-fuser/ce15be9_report1.sqlite"]
RUN = "outside/param-dlrm-8rank"


def _raw_kernels(path: Path) -> tuple[int, int]:
    """(count, Σ dur in ns) of the complete events of category kernel, read with json."""
    opener: Any = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        doc = json.load(fh)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    durs = [e["dur"] for e in events if isinstance(e, dict) and e.get("ph") == "X"
            and str(e.get("cat", "")).lower() == "kernel"]
    return len(durs), round(sum(durs) * 1000)


def _sql_json(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    assert main(["sql", *argv, "--format", "json"]) == 0
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return rows


@pytest.mark.parametrize("relative", KINETO)
def test_kineto_kernels_equal_the_file(relative: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(relative)
    count, total_ns = _raw_kernels(path)
    rows = _sql_json(capsys, str(path), "SELECT count(*) AS n, sum(dur_ns) AS ns FROM kernels")
    assert rows[0]["n"] == count > 0
    assert abs(rows[0]["ns"] - total_ns) <= count  # µs floats to ns: at most 1 ns each


@pytest.mark.parametrize("relative", NSYS)
def test_nsys_kernels_equal_cupti_rows(relative: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = shared_trace(relative)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    count, total = con.execute("SELECT count(*), sum(end - start) FROM "
                               "CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    con.close()
    rows = _sql_json(capsys, str(path), "SELECT count(*) AS n, sum(dur_ns) AS ns FROM kernels")
    assert rows == [{"n": count, "ns": total}]
    assert count > 0


def test_run_of_ranks_has_a_rank_column(capsys: pytest.CaptureFixture[str]) -> None:
    folder = shared_trace(RUN)
    rows = _sql_json(capsys, str(folder), "SELECT rank, count(*) AS n, sum(dur_ns) AS ns "
                     "FROM kernels GROUP BY rank ORDER BY rank")
    assert [r["rank"] for r in rows] == list(range(8))
    for r in rows:  # each rank's kernels are its own file's (worker<rank>_...)
        (file,) = folder.glob(f"worker{r['rank']}_*.json")
        count, total_ns = _raw_kernels(file)
        assert (r["n"], r["ns"]) == (count, total_ns)
    ranks = _sql_json(capsys, str(folder), "SELECT count(DISTINCT rank) AS n FROM host_ops")
    assert ranks == [{"n": 8}]


def test_trtexec_layers(capsys: pytest.CaptureFixture[str]) -> None:
    folder = shared_trace("tensorrt/trex-notebooks-src-2023")
    with open(folder / "profile.json") as fh:
        profile = json.load(fh)
    layers = [e for e in profile if isinstance(e, dict) and "name" in e]
    rows = _sql_json(capsys, str(folder), "SELECT count(*) AS n FROM layers")
    assert rows == [{"n": len(layers)}]


def _documented() -> list[tuple[str, str]]:
    text = (ROOT / "docs" / "sql.md").read_text()
    return re.findall(r"<!-- input: (\S+) -->\n```sql\n(.*?)```", text, re.S)


def test_the_doc_has_a_dozen_queries() -> None:
    assert len(_documented()) >= 12


_OPENED: dict[str, Input] = {}


@pytest.mark.parametrize(("relative", "query"), _documented(),
                         ids=[f"q{i + 1}" for i in range(len(_documented()))])
def test_every_documented_query_runs(relative: str, query: str) -> None:
    if relative not in _OPENED:
        _OPENED[relative] = open_input(str(shared_trace(relative)))
    result = run_sql(_OPENED[relative], query)
    assert result.num_rows > 0, query


def test_the_doc_lists_every_column() -> None:
    from stepscope.query.schema import TABLES

    text = (ROOT / "docs" / "sql.md").read_text()
    for table in TABLES:
        assert f"### `{table.name}`" in text
        for c in table.columns:
            assert f"| `{c.name}` | {c.type} |" in text, (table.name, c.name)
