"""stepscope mcp end to end: the MCP SDK's own client starts `stepscope mcp` over stdio and
calls every tool on real traces; a path outside --root (directly, through .. or through a
symlink) is refused."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import SHARED_TRACES, run_in_own_loop, shared_trace

pytest.importorskip("mcp")
pytest.importorskip("duckdb")

from mcp import Client
from mcp.client.stdio import StdioServerParameters

SRC = Path(__file__).resolve().parents[2] / "src"
RESNET = "kineto_resnet50/num_workers_0/worker0.1623143566756.pt.trace.json.gz"
RESNET4 = "kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz"
NSYS = "nsys/nvidia-fuser/a049892_report1.sqlite"
RUN = "outside/param-dlrm-8rank"
TRT = "tensorrt/trex-notebooks-src-2023"


def _server(root: Path) -> StdioServerParameters:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop("STEPSCOPE_DEBUG", None)  # user errors as one line, as a user sees them
    return StdioServerParameters(
        command=sys.executable,
        args=["-c", "from stepscope.cli.main import entry_point; entry_point()", "mcp",
              "--root", str(root)],
        env=env)


def _calls(root: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def go() -> list[Any]:
        async with Client(_server(root), read_timeout_seconds=300) as client:
            tools = await client.list_tools()
            names = {t.name for t in tools.tools}
            assert {"report", "findings", "diff", "sql", "explain_metric"} <= names
            return [await client.call_tool(name, args) for name, args in calls]
    return run_in_own_loop(go)


def _texts(result: Any) -> tuple[str, Any]:
    assert not result.is_error, result.content
    summary, body = result.content
    return summary.text, json.loads(body.text)


def test_every_tool_on_real_traces() -> None:
    shared_trace(RESNET)
    root = SHARED_TRACES
    results = _calls(root, [
        ("report", {"path": RESNET}),
        ("findings", {"path": str(root / RESNET)}),
        ("diff", {"base": RESNET, "new": RESNET4}),
        ("sql", {"path": RESNET, "query": "SELECT count(*) AS n FROM kernels"}),
        ("sql", {"path": NSYS, "query": "SELECT count(*) AS n FROM kernels"}),
        ("sql", {"path": RUN, "query": "SELECT count(DISTINCT rank) AS ranks FROM kernels"}),
        ("sql", {"path": RESNET, "query": "schema"}),
        ("sql", {"path": RESNET, "query": "SELECT nme FROM kernels"}),
        ("report", {"path": TRT}),
        ("explain_metric", {"name": "gpu utilization"}),
        ("explain_metric", {"name": "no such metric xyz"}),
    ])
    text, doc = _texts(results[0])
    assert doc["schema"] == "stepscope.report/1"
    assert "6 steps, average 154.911 ms" in text and "GPU utilization 63.6 %" in text
    text, doc = _texts(results[1])
    ids = [f["id"] for f in doc["findings"]]
    # replayed savings: the DataLoader first, then the fused optimizer (3.4 ms) before AMP (2.7 ms)
    assert ids[:3] == ["input-pipeline", "unfused-optimizer", "low-mfu"]
    assert "input-pipeline" in text
    text, doc = _texts(results[2])
    assert doc["schema"] == "stepscope.diff/1" and "step time 154.911 ms → 141.068 ms" in text
    with gzip.open(root / RESNET, "rt") as fh:
        kernels = sum(1 for e in json.load(fh)["traceEvents"]
                      if e.get("ph") == "X" and str(e.get("cat", "")).lower() == "kernel")
    assert _texts(results[3])[1]["rows"] == [{"n": kernels}]
    assert _texts(results[4])[1]["rows"] == [{"n": 18}]  # CUPTI_ACTIVITY_KIND_KERNEL rows
    assert _texts(results[5])[1]["rows"] == [{"ranks": 8}]
    schema = _texts(results[6])[1]
    assert {"table": "kernels", "column": "dur_ns", "type": "BIGINT",
            "doc": "duration, ns"} in schema["rows"]
    assert results[7].is_error and 'Referenced column "nme" not found' in \
        results[7].content[0].text
    text, doc = _texts(results[8])
    assert doc["source"]["format"] == "trtexec" and "TensorRT 8.5.2" in text
    text, doc = _texts(results[9])
    assert doc["term"] == "GPU utilization" and "union of that device's kernel intervals" \
        in doc["text"]
    assert results[10].is_error and "no metric called" in results[10].content[0].text


def test_paths_outside_the_root_are_refused(tmp_path: Path) -> None:
    trace = shared_trace(RESNET)
    root = tmp_path / "root"
    root.mkdir()
    (root / "link.json.gz").symlink_to(trace)  # a symlink leading out of the root
    results = _calls(root, [
        ("report", {"path": str(trace)}),
        ("sql", {"path": "../../" + str(trace), "query": "SELECT 1"}),
        ("findings", {"path": "link.json.gz"}),
        ("diff", {"base": str(trace), "new": str(trace)}),
        ("report", {"path": "s3://bucket/trace.json"}),
    ])
    for r in results:
        assert r.is_error, r.content
        assert "outside the allowed folder(s)" in r.content[0].text, r.content[0].text
