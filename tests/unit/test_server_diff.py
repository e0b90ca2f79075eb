"""``api/diff``: two traces of the logdir compared as ``stepscope diff`` does; 4xx on bad input."""

from __future__ import annotations

import time
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.dashboard_builders import dashboard_trace

from stepscope.analysis.compare.diff import diff_runs
from stepscope.report.diff_load import summarise_trace
from stepscope.report.json.diff import diff_to_json
from stepscope.server.app import ViewConfig, create_app

BASE, NEW = "run1/worker0.1.pt.trace.json.gz", "run2/worker0.2.pt.trace.json.gz"


@pytest.fixture()
def client(tmp_path: Path) -> Any:
    (tmp_path / "run1").mkdir()
    (tmp_path / "run2").mkdir()
    dashboard_trace(tmp_path / "run1", "worker0.1.pt.trace.json.gz", steps=3)
    dashboard_trace(tmp_path / "run2", "worker0.2.pt.trace.json.gz", steps=5)
    with TestClient(create_app(ViewConfig(root=str(tmp_path), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        c.root = tmp_path
        yield c


def _diff(client: Any, **params: str) -> Any:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = client.get("/api/diff", params=params)
        if r.status_code != 202:
            return r
        time.sleep(0.05)
    raise AssertionError("traces never loaded")


def test_diff_equals_stepscope_diff_of_the_two_files(client: Any) -> None:
    """Same rows and the same per-step significance tests as the CLI on the two traces."""
    r = _diff(client, base=BASE, new=NEW)
    assert r.status_code == 200, r.text
    expected = diff_to_json(diff_runs(
        *(replace(summarise_trace(str(client.root / t), use_cache=False), label=t)
          for t in (BASE, NEW))))
    got = r.json()
    assert got["schema"] == "stepscope.diff/1"
    assert got == expected
    assert got["base"]["path"] == BASE and got["new"]["steps"] == 5
    assert got["base"]["complete_tables"] and not got["warnings"]
    # kernels and operators carry their test (the reports alone have no per-step samples)
    assert got["kernels"] and all(k["significance"] is not None for k in got["kernels"])
    assert got["operators"] and all(o["significance"] is not None for o in got["operators"])


@pytest.mark.parametrize(("params", "status"), [
    ({}, 400),
    ({"base": BASE}, 400),
    ({"base": BASE, "new": "../etc/passwd"}, 404),
    ({"base": "%2e%2e/x", "new": NEW}, 404),
    ({"base": BASE, "new": "run2/nope.json"}, 404),
])
def test_bad_parameters_are_4xx(client: Any, params: dict[str, str], status: int) -> None:
    assert client.get("/api/diff", params=params).status_code == status
