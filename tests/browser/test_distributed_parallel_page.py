"""The Distributed page's parallelism views: all-to-all heatmap, FSDP units, pipeline, skew;
and its large-run form (heatmaps, histograms) at 1,000 ranks."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest

from stepscope.report.html import render_document
from stepscope.report.run import build_run_report, find_run
from tests.browser.conftest import shot
from tests.browser.test_distributed_page import bytes_text
from tests.conftest import ROOT

DATA = ROOT / "tests" / "data" / "distributed"


def _open(page: Any, tmp_path: Path, doc: dict[str, Any], name: str) -> None:
    out = tmp_path / f"{name}.html"
    out.write_text(render_document(doc, name, title=name))
    page.goto(out.as_uri())
    page.wait_for_selector("#page-distributed", timeout=60_000)


def _report(name: str) -> dict[str, Any]:
    return build_run_report(find_run([str(DATA / name)]), executor="serial",
                            use_cache=False).to_json()


def _pipeline(stages: int, ranks_per_stage: int) -> dict[str, Any]:
    """``distributed.pipeline`` as the pipeline analysis writes it (docs/report-json.md)."""
    return {
        "stages": [{"stage": s, "ranks": list(range(s * ranks_per_stage,
                                                    (s + 1) * ranks_per_stage)),
                    "bubble_pct": 10.0 + 5 * s, "forward_us_per_microbatch": 1000.0 * (s + 1),
                    "backward_us_per_microbatch": 2000.0 * (s + 1),
                    "compute_us": 3000.0 * (s + 1) * 8, "idle_us": 4000.0 * (stages - s),
                    "step_us": 100_000.0} for s in range(stages)],
        "microbatches": 8, "microbatches_from": "trace", "schedule": "1F1B",
        "theoretical_bubble_pct": round(100 * (stages - 1) / (8 + stages - 1), 2),
        "imbalance": 1.6,
    }


def _groups(ranks: list[int], slow: int) -> list[dict[str, Any]]:
    rng = random.Random(1)
    calls = [{"name": "allreduce", "seq": k, "ranks": ranks, "bytes": 4 << 20,
              "transfer_us": 800.0, "skew_us": 5000.0 + k,
              "wait_us": [0.0 if r == slow else 4000.0 + rng.random() * 100 for r in ranks],
              "algbw_gbps": 5.2, "busbw_gbps": 10.4} for k in range(20)]
    return [{"process_group": "0", "ranks": ranks,
             "wait_us": [sum(c["wait_us"][i] for c in calls) for i in range(len(ranks))],
             "calls": calls}]


def test_moe_skew_heatmap_and_fsdp_units(page: Any, tmp_path: Path) -> None:
    doc = _report("moe_skew")
    a = doc["distributed"]["all_to_all"]
    _open(page, tmp_path, doc, "moe-skew")
    page.wait_for_selector("#a2a-heatmap canvas")
    assert page.locator("#a2a-hot").inner_text() == "3"
    assert page.locator("#a2a-imbalance").inner_text() == f"{a['imbalance']:.2f}"
    rows = page.locator("#a2a-table tbody tr")
    assert rows.count() == 4
    first = rows.nth(0)  # sorted by received, busiest first: the hot rank
    assert first.locator("td[data-key='rank']").inner_text() == "3"
    assert first.locator("td[data-key='received']").inner_text() == \
        f"{a['received_bytes'][3] / 2**20:.2f}"
    assert page.locator("#a2a-table th[data-key='received']").inner_text().startswith(
        "received MiB")
    coll = doc["distributed"]["collectives"][0]
    assert page.locator("#collectives-table td[data-key='bytes_per_call']").first.inner_text() \
        == bytes_text(coll["bytes_per_call"])
    assert page.locator("#run-findings .finding .title").first.inner_text().replace(
        "\xa0", " ") == doc["findings"][0]["title"]
    # per process group (gloo writes no group name: one default group of the 4 ranks), its
    # matched calls, skew and waits
    groups = doc["distributed"]["groups"]
    assert len(groups) == 1 and groups[0]["ranks"] == [0, 1, 2, 3]
    assert page.locator("#skew .group h4").first.inner_text().startswith("Group default")
    assert page.locator("#skew-table-0 tbody tr").count() == len(groups[0]["calls"])
    page.locator("#a2a").scroll_into_view_if_needed()
    shot(page, "moe-skew-a2a")
    assert not page.errors, page.errors

    fsdp = _report("fsdp")
    _open(page, tmp_path, fsdp, "fsdp")
    page.wait_for_selector("#fsdp-chart canvas")
    assert page.locator("#fsdp-table tbody tr").count() == len(fsdp["distributed"]["fsdp"]["units"])
    assert "FSDP2 · 4 ranks" in page.locator("#fsdp-summary").inner_text()
    page.locator("#fsdp").scroll_into_view_if_needed()
    shot(page, "fsdp-units")
    assert not page.errors, page.errors


def _scaled(doc: dict[str, Any], n: int, slow: int) -> dict[str, Any]:
    """The real 4-rank MoE report widened to ``n`` ranks (rank r from rank r % 3, ``slow``
    from rank 3), with an n x n all-to-all whose column ``slow`` is 4x, per-group calls and
    a pipeline: what the page must keep legible."""
    out = copy.deepcopy(doc)
    d = out["distributed"]
    src = doc["distributed"]["ranks"]
    d["world_size"] = n
    d["ranks"] = [dict(src[3 if r == slow else r % 3], rank=r) for r in range(n)]
    matrix = [[(4 if j == slow else 1) * 65536 for j in range(n)] for _ in range(n)]
    recv = [sum(row[j] for row in matrix) for j in range(n)]
    d["all_to_all"] = {"ranks": list(range(n)), "matrix_bytes": matrix,
                       "sent_bytes": [sum(row) for row in matrix], "received_bytes": recv,
                       "imbalance": max(recv) / (sum(recv) / n), "hot_ranks": [slow],
                       "calls": 6, "unmapped_calls": 0}
    d["groups"] = _groups(list(range(n)), slow)
    d["pipeline"] = _pipeline(4, n // 4)
    d["fsdp"] = None
    return out


def test_8_ranks_bars_pipeline_and_skew(page: Any, tmp_path: Path) -> None:
    doc = _scaled(_report("moe_skew"), 8, 5)
    _open(page, tmp_path, doc, "eight")
    for sel in ("#ranks-chart canvas", "#comm-chart canvas", "#pipeline-chart canvas",
                "#skew-chart-0 canvas", "#a2a-heatmap canvas", "#a2a-received canvas"):
        page.wait_for_selector(sel)
    assert page.locator("#ranks-heatmap").count() == 0  # bars at 8 ranks
    assert page.locator("#pipeline-table tbody tr").count() == 4
    assert page.locator("#pipeline-table td[data-key='ranks']").first.inner_text() == "0–1"
    assert "schedule 1F1B · 8 micro-batches" in page.locator("#pipeline-summary").inner_text()
    assert page.locator("#skew-table-0 tbody tr").count() == 20
    assert page.locator("#a2a-hot").inner_text() == "5"
    page.locator("#pipeline").scroll_into_view_if_needed()
    shot(page, "eight-ranks-pipeline")
    assert not page.errors, page.errors


def test_1000_ranks_heatmaps_and_histograms(page: Any, tmp_path: Path) -> None:
    doc = _scaled(_report("moe_skew"), 1000, 617)
    _open(page, tmp_path, doc, "thousand")
    for sel in ("#ranks-heatmap canvas", "#ranks-histogram canvas", "#comm-histogram canvas",
                "#a2a-heatmap canvas", "#a2a-received canvas", "#skew-chart-0 canvas",
                "#pipeline-chart canvas"):
        page.wait_for_selector(sel, timeout=60_000)
    assert page.locator("#ranks-chart").count() == 0 and page.locator("#comm-chart").count() == 0
    summary = page.locator("#a2a-summary").inner_text()
    assert "cells are blocks of 16 ranks" in summary
    assert page.locator("#a2a-hot").inner_text() == "617"
    assert page.locator("#a2a-most").inner_text().startswith("most received: rank 617: ")
    # the busiest rank leads the traffic table; the ranks table finds a rank by search
    assert page.locator("#a2a-table tbody tr").nth(0).locator("td[data-key='rank']") \
        .inner_text() == "617"
    # a stage of 250 ranks is one range, not 250 numbers
    assert page.locator("#pipeline-table td[data-key='ranks']").nth(2).inner_text() == "500–749"
    assert page.locator("#busiest-ranks").inner_text().startswith(
        "most busy computation: rank 617:")
    # tables render 50 rows at 1,000 ranks; search finds any rank
    assert page.locator("#ranks-table tbody tr").count() == 50
    assert page.locator("#a2a-table tbody tr").count() == 50
    page.fill("#ranks-table-search", "617")
    assert page.locator("#ranks-table tbody tr").count() == 1
    page.fill("#ranks-table-search", "")
    page.locator("#ranks-heatmap").scroll_into_view_if_needed()
    shot(page, "thousand-ranks-top")
    page.locator("#a2a-heatmap").scroll_into_view_if_needed()
    shot(page, "thousand-ranks-a2a")
    page.locator("#skew-chart-0").scroll_into_view_if_needed()
    shot(page, "thousand-ranks-skew")
    assert not page.errors, page.errors


def test_gloo_subgroups_note_on_the_page(page: Any, tmp_path: Path) -> None:
    doc = _report("tp_dp")
    _open(page, tmp_path, doc, "tp-dp")
    note = page.locator("#matching-note")
    note.wait_for()
    assert note.inner_text() == doc["distributed"]["matching_note"]
    assert "{0,1}" in note.inner_text()
    assert not page.errors, page.errors


def test_real_pipeline_capture_page(page: Any, tmp_path: Path) -> None:
    doc = _report("pipeline_4stage_1f1b")
    _open(page, tmp_path, doc, "pipeline")
    page.wait_for_selector("#pipeline-chart canvas")
    assert page.locator("#pipeline-table tbody tr").count() == 4
    assert "point-to-point traffic only" in page.locator("#collectives-none").inner_text()
    assert page.locator("#collectives-table").count() == 0
    assert "schedule 1F1B" in page.locator("#pipeline-summary").inner_text()
    # no collective: sync wait vs transfer has nothing to split; said, not an empty chart
    ranks = doc["distributed"]["ranks"]
    assert all(r["sync_us"] == r["transfer_us"] == 0 for r in ranks)
    assert page.locator("#comm-chart").count() == 0
    assert page.locator("#comm-none").inner_text().startswith(
        "No synchronisation wait or transfer to show: they are split on collectives matched")
    assert "point-to-point sends and receives only" in page.locator("#comm-none").inner_text()
    page.locator("#comm-none").scroll_into_view_if_needed()
    shot(page, "pipeline-no-comm-split")
    assert not page.errors, page.errors


def test_run_critical_path_across_ranks(page: Any, tmp_path: Path) -> None:
    """moe_skew (rank 3 computes 4x the tokens): the page shows the run's path through rank
    3, where it changes rank, and its time by rank adding up to the path."""
    doc = _report("moe_skew")
    cp = doc["critical_path"]
    _open(page, tmp_path, doc, "moe-path")
    summary = page.locator("#run-path-summary")
    summary.wait_for()
    text = summary.inner_text()
    assert f"runs through rank {cp['runs_through_rank']}" in text and "straggler: rank 3" in text
    assert text.startswith(f"{cp['length_us'] / 1000:.3f} ms per step")  # 39.647 ms
    share = 100 * cp["by_rank_us"]["3"] / cp["length_us"]
    assert f"({share:.2f} % of it)" in text
    assert page.locator("#run-path-waits tbody tr").count() == len(cp["waits"]) >= 1
    rows = page.locator("#run-path-ranks tbody tr")
    assert rows.first.locator("td").first.inner_text() == "3"
    last = rows.nth(rows.count() - 1).locator("td")
    assert last.first.inner_text() == "in no event (gaps between events, joined collectives)"
    shares = [float(rows.nth(i).locator("td").nth(2).inner_text()) for i in range(rows.count())]
    assert sum(shares) == pytest.approx(100.0, abs=0.05)
    summary.scroll_into_view_if_needed()
    shot(page, "run-critical-path")
    assert not page.errors, page.errors


def test_run_without_a_path_says_why(page: Any, tmp_path: Path) -> None:
    doc = _report("tp_dp")
    doc["critical_path"] = {"note": "the ranks hold more than 10 events: the run's graph is "
                                    "not built"}
    _open(page, tmp_path, doc, "no-path")
    note = page.locator("#run-path-none")
    note.wait_for()
    assert "more than 10 events" in note.inner_text()
    assert not page.errors, page.errors
