"""The MCP server's parts without a client: path confinement, metric explanations, and the
concise texts (the end-to-end test is tests/integration/test_mcp_real.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.conftest import run_in_own_loop

from stepscope.errors import UsageError
from stepscope.io.confine import confine, resolve_roots
from stepscope.report.glossary import entries, explain


def test_confine(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "run").mkdir(parents=True)
    (root / "t.json").write_text("{}")
    outside = tmp_path / "secret.json"
    outside.write_text("{}")
    roots = resolve_roots([str(root)])
    assert confine("t.json", roots) == str(root / "t.json")  # relative to the first root
    assert confine(str(root / "run"), roots) == str(root / "run")
    for bad in (str(outside), "../secret.json", "run/../../secret.json", "s3://b/t.json",
                str(root) + "-sibling/t.json"):
        with pytest.raises(UsageError, match="outside the allowed folder"):
            confine(bad, roots)
    (root / "link.json").symlink_to(outside)
    with pytest.raises(UsageError, match="outside the allowed folder"):
        confine("link.json", roots)
    # a folder whose entries lead out is refused too: the readers would read them
    (root / "run" / "rank1.json").symlink_to(outside)
    with pytest.raises(UsageError, match=r"rank1\.json links outside"):
        confine("run", roots)
    (root / "run" / "rank1.json").unlink()
    os.symlink(root / "t.json", root / "run" / "rank0.json")  # inside: fine
    assert confine("run", roots) == str(root / "run")
    with pytest.raises(UsageError, match="not a folder"):
        resolve_roots([str(tmp_path / "missing")])


def test_a_trace_whose_memory_timeline_leads_out_is_refused(tmp_path: Path) -> None:
    """`report` reads the memory timeline beside a trace: a symlink there must not lead out."""
    pytest.importorskip("mcp")
    from stepscope.cli.mcp import confined_input

    root = tmp_path / "root"
    root.mkdir()
    (root / "w.1.pt.trace.json").write_text("{}")
    roots = resolve_roots([str(root)])
    assert confined_input("w.1.pt.trace.json", roots) == str(root / "w.1.pt.trace.json")
    outside = tmp_path / "elsewhere.json.gz"
    outside.write_bytes(b"")
    (root / "w.1.memory.raw.json.gz").symlink_to(outside)
    with pytest.raises(UsageError, match="outside the allowed folder"):
        confined_input("w.1.pt.trace.json", roots)


def test_explain_metric_finds_terms_and_sections() -> None:
    assert explain("GPU utilization").section.startswith("GPU metrics")
    assert explain("gpu   UTILIZATION").term == "GPU utilization"
    assert explain("mfu").term == "MFU and HFU"
    assert explain("Stragglers").text.startswith("- **Stragglers**")
    assert explain("steps").text.startswith("## Steps")
    assert explain("warmup").term == "Warm-up"  # the closest spelling
    with pytest.raises(UsageError, match="no metric called"):
        explain("flux capacitor")
    terms = {e.term for e in entries()}
    assert {"Tensor Core share", "Est. SM efficiency", "Modules", "Kernels"} <= terms


def test_a_tool_that_fails_says_why_in_one_line(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """An unexpected error inside a tool run in-process (sql) reaches the assistant as one
    line naming it, as the CLI prints it, not the SDK's bare "Error executing tool sql"."""
    pytest.importorskip("mcp")
    pytest.importorskip("duckdb")
    from mcp.server.mcpserver.exceptions import ToolError
    from tests.builders import TraceBuilder

    from stepscope.cli.mcp import build_server
    from stepscope.query import engine

    b = TraceBuilder()
    with b.step(1, 0, 100):
        b.launch(b.op("aten::mm", 10, 50), "cudaLaunchKernel", 20, 5, kernel="sgemm",
                 k_ts=30, k_dur=20)
    trace = b.write(tmp_path)

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(engine, "run_sql", broken)
    server = build_server((str(tmp_path),), use_cache=False)
    with pytest.raises(ToolError, match=r"internal error \(RuntimeError: boom\)"):
        run_in_own_loop(server.call_tool, "sql", {"path": str(trace), "query": "SELECT 1"})
    monkeypatch.undo()
    with pytest.raises(ToolError, match="no table nope"):
        run_in_own_loop(server.call_tool, "sql",
                        {"path": trace.name, "query": "SELECT * FROM nope"})
