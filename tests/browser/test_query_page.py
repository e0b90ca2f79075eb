"""The dashboard's Query page in Debian's chromium on a real trace: the table shows what
`stepscope.sql` answers, the chart draws the first numeric column, and a bad query shows
DuckDB's message in one line."""

from __future__ import annotations

from typing import Any

import pytest

import stepscope
from tests.browser.conftest import shot
from tests.conftest import shared_trace

pytest.importorskip("duckdb")

RESNET = "kineto_resnet50"
FIRST = "num_workers_0/worker0.1623143089861.pt.trace.json.gz"  # the logdir's first trace


def test_query_page(page: Any, serve: Any) -> None:
    root = shared_trace(RESNET)
    server = serve(str(root))
    page.goto(server.url + "#/query")
    page.wait_for_selector("#query-table tbody tr", timeout=120_000)
    expected = stepscope.sql(str(root / FIRST), "SELECT name, count(*) AS calls, sum(dur_us) "
                             "AS total_us FROM kernels GROUP BY name ORDER BY total_us DESC "
                             "LIMIT 20").to_pylist()
    assert page.locator("#query-count").inner_text().strip() == "20 rows"
    first = page.locator("#query-table tbody tr").first
    assert first.locator("td[data-key='c0']").inner_text() == expected[0]["name"]
    assert first.locator("td[data-key='c1']").inner_text() == str(expected[0]["calls"])
    page.wait_for_selector("#query-chart canvas")
    shot(page, "query-resnet")

    page.fill("#query-text", "SELECT count(*) AS n, sum(bytes) AS b FROM memcpy")
    page.click("#query-run")
    n = stepscope.sql(str(root / FIRST), "SELECT count(*) AS n FROM memcpy").to_pylist()[0]["n"]
    page.wait_for_function("(v) => document.querySelector(\"#query-table td[data-key='c0']\")"
                           "?.textContent === v", arg=str(n), timeout=30_000)

    page.fill("#query-text", "SELECT nme FROM kernels")
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#query-error")
    assert 'Referenced column "nme" not found' in page.locator("#query-error").inner_text()
    assert page.locator("#query-table").count() == 0
    # the 400 of the bad query is the browser's only complaint
    assert all("status of 400" in e for e in page.errors), page.errors
