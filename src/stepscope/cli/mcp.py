"""``stepscope mcp``: a Model Context Protocol server over stdio for AI assistants (docs/mcp.md).

Tools: ``report(path)``, ``findings(path)``, ``diff(base, new)``, ``sql(path, query)`` and
``explain_metric(name)``. Each answers with a concise text (what a person would read first)
and then the JSON contract (``stepscope report --format json``, ``diff --format json``, the
query's rows); ``report``/``findings``/``diff`` run the very commands the CLI runs, so the
JSON is the same document. Every input path is resolved (symlinks followed) and must lie
inside a ``--root`` folder (default: the current folder); a relative path is relative to the
first root. SQL cannot reach files at all (query/engine.py locks DuckDB down).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import threading
from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent

from stepscope.errors import StepscopeError, UsageError, one_line
from stepscope.units import count

SQL_ROWS = 200  # rows a sql answer carries (the text shows the first 50)
SQL_TEXT_ROWS = 50


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root", action="append", default=[], metavar="DIR",
        help="a folder whose traces the assistant may read (repeatable; default: the current "
        "folder); paths outside every root are refused, symlinks resolved",
    )
    parser.add_argument("--no-cache", action="store_true",
                        help="re-parse traces instead of using the Arrow cache")


_LOCK = threading.Lock()  # one command at a time: they capture this process's stdout


def _command_json(argv: list[str]) -> dict[str, Any]:
    """Run a stepscope command in-process and parse its JSON output; its one-line error as a
    UsageError when it fails."""
    from stepscope.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    with _LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    if code not in (0, 1):  # diff exits 1 for a broken gate; no gate is given here
        lines = err.getvalue().strip().splitlines()
        raise UsageError(lines[-1] if lines else f"stepscope {argv[0]} failed ({code})")
    doc: dict[str, Any] = json.loads(out.getvalue())
    return doc


def confined_input(path: str, roots: tuple[str, ...]) -> str:
    """``path`` resolved inside ``roots`` (io/confine.py), and so is the file a report reads
    beside a trace: its memory timeline (formats/memory/timeline.py), which could otherwise
    be a symlink leading out."""
    import os

    from stepscope.formats.memory.timeline import timeline_path
    from stepscope.io.confine import confine

    real = confine(path, roots)
    if os.path.isfile(real) and os.path.lexists(beside := timeline_path(real)):
        confine(beside, roots)
    return real


def _pct(v: Any) -> str:
    return f"{float(v):.1f} %" if isinstance(v, (int, float)) else "n/a"


def findings_text(findings: list[dict[str, Any]], limit: int = 10) -> list[str]:
    if not findings:
        return ["no findings"]
    out = [f"{count(len(findings), 'finding')}, largest saving first:"]
    for f in findings[:limit]:
        saving = f.get("estimated_saving", {})
        out.append(f"- [{f.get('severity')}] {f.get('title')} ({f.get('id')}): up to "
                   f"{_pct(saving.get('pct_of_step'))} of the step; fix: "
                   f"{one_line(str(f.get('fix', {}).get('text', '')), 240)}")
    if len(findings) > limit:
        out.append(f"… and {len(findings) - limit} more (in the JSON)")
    return out


def report_text(doc: dict[str, Any]) -> str:
    """The first things to read in a report: what it is, the step, where time goes, findings."""
    src = doc.get("source", {})
    lines = [f"{src.get('path')}: {src.get('format')}"
             + (" (partial: some events could not be read)" if src.get("partial") else "")]
    breakdown = doc.get("breakdown") or {}
    if breakdown.get("step_avg_us") is not None:
        shares = sorted((breakdown.get("pct") or {}).items(), key=lambda kv: -kv[1])
        lines.append(f"{count(len(doc.get('steps') or []), 'step')}, average "
                     f"{breakdown['step_avg_us'] / 1000:.3f} ms; time: "
                     + ", ".join(f"{k} {v:.1f} %" for k, v in shares if v >= 0.5))
    for gpu in doc.get("gpu") or []:
        if isinstance(gpu, dict) and "utilization_pct" in gpu:
            lines.append(f"device {gpu.get('device')}: GPU utilization "
                         f"{_pct(gpu.get('utilization_pct'))}")
    dist = doc.get("distributed")
    if isinstance(dist, dict) and dist.get("world_size"):
        lines.append(f"run of {count(len(dist.get('ranks') or []), 'rank')}, world size "
                     f"{dist.get('world_size')}, backend {dist.get('backend')}")
    trt = doc.get("tensorrt")
    if isinstance(trt, dict):
        lines.append(f"TensorRT engine {trt.get('engine')} (TensorRT {trt.get('trt_version')})")
    return "\n".join(lines + findings_text(doc.get("findings") or []))


def diff_text(doc: dict[str, Any]) -> str:
    st = doc.get("step_time") or {}
    lines = [f"base {doc.get('base', {}).get('path')} -> new {doc.get('new', {}).get('path')}"]
    if st:
        lines.append(f"step time {st.get('base_us', 0) / 1000:.3f} ms → "
                     f"{st.get('new_us', 0) / 1000:.3f} ms ({st.get('delta_pct'):+} %): "
                     f"{st.get('verdict')}")
    change = doc.get("main_change")
    if change:
        lines.append(f"main change: {json.dumps(change)[:400]}")
    for c in doc.get("categories") or []:
        sig = (c.get("significance") or {}).get("significant")
        if sig:
            lines.append(f"- {c.get('name')}: {c.get('base_us')} -> {c.get('new_us')} µs per "
                         f"step ({c.get('delta_pct'):+} %, significant)")
    return "\n".join(lines)


def build_server(roots: tuple[str, ...], use_cache: bool = True) -> MCPServer:
    """The MCP server with stepscope's tools, reading only inside ``roots``."""
    server = MCPServer(
        "stepscope",
        instructions="stepscope analyses PyTorch profiler traces, Nsight Systems exports, "
        "runs of many ranks and TensorRT trtexec outputs. Start with report(path) or "
        "findings(path); ask your own questions with sql(path, query) (tables: "
        "docs/sql.md, or sql(path, 'schema')); explain_metric(name) says how a number is "
        f"computed. Paths must lie inside: {', '.join(roots)}.",
    )
    cache = [] if use_cache else ["--no-cache"]

    def answer(text: str, doc: Any) -> CallToolResult:
        body = json.dumps(doc, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(content=[TextContent(type="text", text=text),
                                       TextContent(type="text", text=body)],
                              structured_content=doc if isinstance(doc, dict) else None)

    def guarded(work: Callable[[], CallToolResult]) -> CallToolResult:
        try:
            return work()
        except StepscopeError as exc:
            raise ToolError(one_line(str(exc), 600)) from None
        except Exception as exc:  # a bug of ours: one line, as the CLI says it (cli/main.py);
            # the SDK would answer only "Error executing tool sql", its reason in a log
            raise ToolError(f"internal error ({type(exc).__name__}: "
                            f"{one_line(str(exc), 600)})") from exc

    def path_of(path: str) -> str:
        return confined_input(path, roots)

    @server.tool(description="Analyse a trace (PyTorch profiler JSON, Nsight Systems export), "
                 "a folder of rank traces or TensorRT trtexec outputs: a summary, then the "
                 "stepscope.report/1 JSON (docs/report-json.md). top: rows per table.")
    def report(path: str, top: int = 10) -> CallToolResult:
        def work() -> CallToolResult:
            doc = _command_json(["report", path_of(path), "--format", "json",
                                 "--top", str(max(1, top)), *cache])
            return answer(report_text(doc), doc)
        return guarded(work)

    @server.tool(description="The advisor's findings for a trace, a run of ranks or trtexec "
                 "outputs: each problem, its estimated saving per step, the evidence and the "
                 "fix (docs/advice.md).")
    def findings(path: str) -> CallToolResult:
        def work() -> CallToolResult:
            doc = _command_json(["report", path_of(path), "--format", "json", *cache])
            found = doc.get("findings") or []
            return answer("\n".join(findings_text(found, limit=20)),
                          {"source": doc.get("source"), "findings": found})
        return guarded(work)

    @server.tool(description="Compare two runs (traces, folders of traces, saved reports or "
                 "TensorRT outputs): step time with significance, per-category and per-kernel "
                 "changes; the stepscope.diff/1 JSON (docs/diff-json.md).")
    def diff(base: str, new: str, top: int = 10) -> CallToolResult:
        def work() -> CallToolResult:
            doc = _command_json(["diff", path_of(base), path_of(new), "--format", "json",
                                 "--top", str(max(1, top)), *cache])
            return answer(diff_text(doc), doc)
        return guarded(work)

    @server.tool(description="Run a DuckDB SQL query over a trace, a run of ranks (every "
                 "table has a rank column) or trtexec outputs. Tables: host_ops, runtime, "
                 "kernels, memcpy, memset, links, steps, memory, modules, devices, "
                 "collectives, syncs, findings, nvtx (nsys), layers (TensorRT); times in "
                 "*_ns and *_us columns. query='schema' lists the columns (docs/sql.md). "
                 f"Answers carry up to {SQL_ROWS} rows.")
    def sql(path: str, query: str) -> CallToolResult:
        def work() -> CallToolResult:
            import pyarrow as pa

            from stepscope.query.engine import open_input, run_sql, schema_rows
            from stepscope.query.output import rows, to_table

            inp = open_input(path_of(path), use_cache=use_cache)
            if query.strip().lower().rstrip(";") in ("schema", "--schema"):
                table = pa.Table.from_pylist(schema_rows(inp))
            else:
                table = run_sql(inp, query)
            shown = table.slice(0, SQL_ROWS)
            doc = {"columns": table.column_names, "row_count": table.num_rows,
                   "truncated": table.num_rows > SQL_ROWS, "rows": rows(shown)}
            return answer(to_table(table, SQL_TEXT_ROWS).rstrip(), doc)
        return guarded(work)

    @server.tool(description="How stepscope computes a metric or a section of its report "
                 "(e.g. 'GPU utilization', 'MFU', 'Steps', 'Stragglers'), from docs/metrics.md.")
    def explain_metric(name: str) -> CallToolResult:
        def work() -> CallToolResult:
            from stepscope.report.glossary import clipped, explain

            e = explain(name)
            text = clipped(e.text)
            return answer(text if e.section == e.term else f"(section: {e.section})\n{text}",
                          {"term": e.term, "section": e.section, "text": text})
        return guarded(work)

    return server


def run(args: argparse.Namespace) -> int:
    from stepscope.io.confine import resolve_roots

    server = build_server(resolve_roots(args.root), use_cache=not args.no_cache)
    server.run("stdio")
    return 0
