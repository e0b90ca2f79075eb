"""The Distributed page on a real 8-rank run: its numbers are the run report's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.report.run import build_run_report, find_run
from tests.browser.conftest import shot
from tests.browser.helpers import cell, column, shown_us, time_unit
from tests.conftest import shared_trace


def _cells(page: Any, table: str, i: int, keys: list[str]) -> dict[str, str]:
    row = page.locator(f"#{table} tbody tr").nth(i)
    return {k: row.locator(f"td[data-key='{k}']").inner_text().strip() for k in keys}


def bytes_text(b: float | None) -> str:
    """DistributedViews.tsx ``bytesText``: one binary unit from the value, 2 decimals."""
    if b is None:
        return "—"
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(b) >= div:
            return f"{b / div:.2f} {unit}"
    return f"{b:.0f} B"


def check_run_page(page: Any, want: dict[str, Any]) -> None:
    """Every table of the Distributed page equals the run report's figures."""
    dist = want["distributed"]
    ranks = dist["ranks"]

    def us(rows: list[dict[str, Any]], r: dict[str, Any], key: str) -> str:
        return shown_us(r[key], column(rows, key))  # in the unit of its column

    assert page.locator("#ranks-table tbody tr").count() == len(ranks) == 8
    unit = time_unit(column(ranks, "computation_us"))[0]
    assert cell(page, "#ranks-table th[data-key='computation_us']") == f"computation {unit}"
    for i, r in enumerate(ranks):
        got = _cells(page, "ranks-table", i, ["rank", "computation_us", "overlap_us",
                                              "communication_us", "sync_us", "transfer_us",
                                              "other_us", "comm_overlap_pct"])
        assert got == {"rank": str(r["rank"]),
                       "computation_us": us(ranks, r, "computation_us"),
                       "overlap_us": us(ranks, r, "overlap_us"),
                       "communication_us": us(ranks, r, "communication_us"),
                       "sync_us": us(ranks, r, "sync_us"),
                       "transfer_us": us(ranks, r, "transfer_us"),
                       "other_us": us(ranks, r, "other_us"),
                       "comm_overlap_pct": f"{r['comm_overlap_pct']:.2f}"}
    # stragglers slowest first: rank 7 and the wait it causes
    assert dist["stragglers"][0]["rank"] == 7
    for i, s in enumerate(dist["stragglers"]):
        got = _cells(page, "stragglers-table", i, ["rank", "wait_caused_us", "share_pct"])
        assert got == {"rank": str(s["rank"]),
                       "wait_caused_us": us(dist["stragglers"], s, "wait_caused_us"),
                       "share_pct": f"{s['share_pct']:.2f}"}
    for i, st in enumerate(dist["steps"]):
        got = _cells(page, "steps-table", i, ["step", "last_rank", "wait_us"])
        assert got == {"step": st["step"], "last_rank": str(st["last_rank"]),
                       "wait_us": us(dist["steps"], st, "wait_us")}
    for i, c in enumerate(dist["collectives"]):
        got = _cells(page, "collectives-table", i, ["collective", "calls", "bytes_per_call",
                                                    "time_us", "algbw_gbps", "busbw_gbps"])
        assert got == {"collective": c["collective"], "calls": str(c["calls"]),
                       "bytes_per_call": bytes_text(c["bytes_per_call"]),
                       "time_us": us(dist["collectives"], c, "time_us"),
                       "algbw_gbps": f"{c['algbw_gbps']:.4f}",
                       "busbw_gbps": f"{c['busbw_gbps']:.4f}"}
    # one definition per word; the straggler table's computation includes overlap and says so
    assert page.locator("#definitions dt").all_inner_texts()[:4] == [
        "computation", "communication", "overlap", "other"]
    assert cell(page, "#stragglers-table th[data-key='computation_us']").startswith(
        "busy computation")
    cards = page.locator("#run-findings .finding")
    assert cards.count() == len(want["findings"]) >= 1
    # numbers keep their unit on their line (no-break spaces, format.ts glue)
    assert cell(page, "#run-findings .finding .title").replace("\xa0", " ") == \
        want["findings"][0]["title"]


def test_distributed_page_on_dlrm_8_ranks(page: Any, serve: Any) -> None:
    root = shared_trace("outside/param-dlrm-8rank")
    want = build_run_report(find_run([str(root)]), executor="serial").to_json()
    server = serve(str(root))
    # bad parameters are 4xx, never 500
    assert page.request.get(server.url + "api/run").status == 400
    assert page.request.get(server.url + "api/run?run=nope").status == 404
    page.goto(server.url + "#/distributed")
    page.wait_for_selector("#page-distributed", timeout=120_000)
    assert page.locator("#nav-distributed").count() == 1
    check_run_page(page, want)
    page.wait_for_selector("#ranks-chart canvas")
    page.wait_for_selector("#comm-chart canvas")
    shot(page, "dlrm-8rank-distributed")
    page.locator("#collectives-table").scroll_into_view_if_needed()
    shot(page, "dlrm-8rank-distributed-tables")
    assert not page.errors, page.errors


def test_run_html_report_from_file(page: Any, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    """`stepscope report DIR --html`: the Distributed page inlined, no server, no network."""
    root = shared_trace("outside/param-dlrm-8rank")
    out = tmp_path / "run.html"
    assert main(["report", str(root), "--html", str(out), "--format", "json",
                 "--executor", "serial"]) == 0
    want = json.loads(capsys.readouterr().out)
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-distributed", timeout=60_000)
    assert [a.inner_text() for a in page.locator("header nav a").all()] == \
        ["Distributed", "Findings"]
    check_run_page(page, want)
    shot(page, "html-dlrm-8rank-distributed")
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requests), requests
    assert not page.errors, page.errors
