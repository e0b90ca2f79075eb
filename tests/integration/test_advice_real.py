"""Advisor on real traces (../shared/traces): the right findings fire, ranked."""

from __future__ import annotations

import pytest
from tests.conftest import shared_trace

import tracesight
from tracesight.advice import Finding, advise
from tracesight.report.build import run_analyses

NW0 = "kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz"
NW4 = "kineto_resnet50/num_workers_4/worker0.1623212756351.pt.trace.json.gz"


def _advise(rel: str) -> list[Finding]:
    return advise(run_analyses(tracesight.load(str(shared_trace(rel)), cache=False)))


def test_num_workers_0_leads_with_the_input_pipeline() -> None:
    fs = _advise(NW0)
    assert fs[0].id == "input-pipeline"
    assert fs[0].saving_pct == pytest.approx(33.4, abs=0.5)  # DataLoader share of the step
    assert any("num_workers=0" in e for e in fs[0].evidence)
    assert fs[0].source_lines[0].startswith("resnet50_profiler_api.py(42)")
    ids = [f.id for f in fs]
    # V100 (cc 7.0), fp32 convolutions: torch-tb-profiler reports 68 % eligible, 0 % on TC
    tc = next(f for f in fs if f.id == "tensor-cores")
    assert "68 % of GPU kernel time" in tc.evidence[0]
    assert "pageable-memcpy" in ids  # torch 1.9: Memcpy HtoD (Pageable -> Device)


def test_num_workers_4_has_no_input_pipeline_finding() -> None:
    ids = [f.id for f in _advise(NW4)]
    assert "input-pipeline" not in ids
    assert "tensor-cores" in ids


def test_findings_are_ranked_by_saving() -> None:
    fs = _advise(NW0)
    savings = [f.saving_us for f in fs]
    assert savings == sorted(savings, reverse=True)
