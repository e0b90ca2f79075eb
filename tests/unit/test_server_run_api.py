"""The dashboard's run API: a logdir run whose workers are ranks, as `stepscope report DIR`."""

from __future__ import annotations

import time
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # starlette asks for httpx2; httpx still works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.dashboard_builders import dashboard_trace
from tests.distributed_builders import write_run

from stepscope.report.run import build_run_report, find_run
from stepscope.server.app import ViewConfig, create_app


def _wait(c: Any, run: str) -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        r = c.get("/api/run", params={"run": run})
        if r.status_code != 202:
            return r
        assert r.json()["state"] in ("queued", "reading")
        time.sleep(0.05)
    raise AssertionError("run never loaded")


def test_run_report_equals_cli_json_and_bad_params_are_4xx(tmp_path: Path) -> None:
    (tmp_path / "ddp").mkdir()
    (tmp_path / "single").mkdir()
    (tmp_path / "broken").mkdir()
    write_run(tmp_path / "ddp", [1000.0, 1000.0, 3000.0])
    dashboard_trace(tmp_path / "single")
    for i in range(2):
        (tmp_path / "broken" / f"rank{i}.pt.trace.json").write_text("{not json")
    with TestClient(create_app(ViewConfig(root=str(tmp_path), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        r = _wait(c, "ddp")
        assert r.status_code == 200
        want = build_run_report(find_run([str(tmp_path / "ddp")]), executor="serial",
                                use_cache=False).to_json()
        assert r.json()["distributed"] == want["distributed"]
        assert r.json()["distributed"]["stragglers"][0]["rank"] == 2
        assert c.get("/api/run").status_code == 400
        assert c.get("/api/run", params={"run": "../etc"}).status_code == 404
        assert c.get("/api/run", params={"run": "single"}).status_code == 400
        bad = _wait(c, "broken")
        assert bad.status_code == 422 and "no rank could be read" in bad.json()["error"]
