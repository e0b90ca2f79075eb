"""`stepscope diff A B --html`: the Compare page from file://, numbers equal to the JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepscope.cli.main import main
from stepscope.report.html import render_document, write_page
from tests.browser.conftest import shot
from tests.browser.helpers import shown_us, signed
from tests.conftest import inlined_data, shared_trace
from tests.diff_builders import training_trace


def text(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.inner_text()).strip()


def embedded(html: Path) -> dict[str, Any]:
    return inlined_data(html.read_text(encoding="utf-8"))


def test_diff_html_of_the_resnet_pair(page: Any, tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    root = shared_trace("kineto_resnet50")
    out = tmp_path / "diff.html"
    base = str(root / "num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    new = str(root / "num_workers_4/worker0.1623212756351.pt.trace.json.gz")
    code = main(["diff", base, new, "--format", "json", "--html", str(out),
                 "--fail-on", "step_time>+5%", "--fail-on", "category:dataloader<-50%"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1  # the data loader shrank by more than 50 %: that threshold breaks
    assert embedded(out)["report"] == doc  # the page carries exactly the JSON
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-compare")
    # only Compare: a diff has no single-run pages
    assert [a.inner_text() for a in page.locator("header nav a").all()] == ["Compare"]
    st = doc["step_time"]
    unit = [st["base_us"], st["new_us"]]  # the page's one unit
    assert text(page, "#diff-step-base") == shown_us(st["base_us"], unit)
    assert text(page, "#diff-step-new") == shown_us(st["new_us"], unit)
    assert text(page, "#diff-step-delta") == signed(st["delta_us"], unit)
    assert text(page, "#diff-verdict") == st["verdict"] == "improvement"
    assert text(page, "#diff-main") == "Main change: dataloader"
    assert text(page, "#diff-gate-verdict") == "FAILED"
    gate = page.locator("#diff-gate tbody tr")
    assert gate.count() == 2
    assert [gate.nth(i).locator("td").nth(1).inner_text() for i in range(2)] == ["ok", "broken"]
    assert gate.nth(1).locator("td").nth(2).inner_text() == doc["gate"][1]["reason"]
    sides = text(page, "#diff-sides")
    assert base in sides and new in sides
    assert page.locator("#diff-operators tbody tr").count() == len(doc["operators"])
    assert page.locator("#diff-kernels tbody tr").count() == len(doc["kernels"])
    k = doc["kernels"][0]
    row = page.locator("#diff-kernels tbody tr").first
    assert row.locator("td[data-key='name']").inner_text() == k["name"]
    assert row.locator("td[data-key='delta_us']").inner_text() == signed(k["delta_us"], unit)
    shot(page, "diff-html-resnet")
    assert all(u.startswith(("file://", "data:", "blob:")) for u in requests), requests
    assert not page.errors, page.errors


def test_diff_html_shows_hostile_names_as_text(page: Any, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    base = training_trace(tmp_path, "base.json", seed=1)
    slow = training_trace(tmp_path, "slow.json", seed=2, mm_scale=1.5)
    assert main(["diff", str(base), str(slow), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    evil = '<img src=x onerror="document.title=\'pwned\'"></script><script>alert(1)</script>'
    doc["kernels"][0]["name"] = evil
    doc["main_change"] = evil
    out = write_page(render_document(doc, evil, title=evil), str(tmp_path / "evil.html"))
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(Path(out).as_uri())
    page.wait_for_selector("#diff-kernels")
    assert page.locator("#diff-kernels tbody tr td[data-key='name']").first.inner_text() == evil
    assert text(page, "#diff-main") == f"Main change: {evil}"
    assert page.locator("img[src=x]").count() == 0
    # the page's title names the page and the input (as text: never "pwned")
    assert page.title() == f"Compare · {evil} · stepscope" and not dialogs
    # the slower sgemm (x1.5) is the change the page leads with
    assert text(page, "#diff-verdict") == "regression"
    assert not page.errors, page.errors
