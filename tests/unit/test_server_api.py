"""The dashboard's JSON API: discovery, the report's numbers, level of detail, security."""

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

from tests.dashboard_builders import EVIL_KERNEL, EVIL_OP, dashboard_trace

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from stepscope.server.app import ViewConfig, create_app

TRACE = "run1/worker0.1.pt.trace.json.gz"


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    (tmp_path / "run1").mkdir()
    dashboard_trace(tmp_path / "run1")
    return tmp_path


@pytest.fixture()
def client(logdir: Path) -> Any:
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        yield c


def wait_ready(client: Any, trace: str = TRACE) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = client.get("/api/report", params={"trace": trace})
        if r.status_code == 200:
            return r.json()  # type: ignore[no-any-return]
        assert r.status_code == 202, r.text
        assert r.json()["state"] in ("queued", "reading", "analysing", "indexing")
        time.sleep(0.05)
    raise AssertionError("trace never loaded")


def test_discovery_run_worker_span_and_new_traces(client: Any, logdir: Path) -> None:
    runs = client.get("/api/runs").json()["runs"]
    st = (logdir / TRACE).stat()
    assert runs == [{"run": "run1", "workers": [{"worker": "worker0", "spans": [
        {"span": "1", "trace": TRACE, "size": st.st_size, "kind": "trace",
         "time": round(st.st_mtime, 3)}]}]}]
    (logdir / "run2").mkdir()
    dashboard_trace(logdir / "run2", "rank3.77.pt.trace.json")
    runs = client.get("/api/runs").json()["runs"]  # no restart
    assert [r["run"] for r in runs] == ["run1", "run2"]
    assert runs[1]["workers"][0]["worker"] == "rank3"
    assert runs[1]["workers"][0]["spans"][0]["span"] == "77"


def test_report_equals_json_report(client: Any, logdir: Path) -> None:
    got = wait_ready(client)
    expected = build_report(load_trace(str(logdir / TRACE), use_cache=False), top=1000).to_json()
    assert got == expected
    assert got["breakdown"]["step_avg_us"] == pytest.approx(1000.0)
    assert {k["name"] for k in got["kernels"]} == {EVIL_KERNEL, "ampere_sgemm_64x64_nn"}
    assert client.get("/api/progress", params={"trace": TRACE}).json()["state"] == "ready"


def test_timeline_level_of_detail(client: Any) -> None:
    wait_ready(client)
    meta = client.get("/api/timeline/meta", params={"trace": TRACE}).json()
    # 3 steps x (step + 2 ops + 2 launches) on one thread, 3 x 2 kernels on stream 7
    assert meta["events"] == 21
    assert [(r["group"], r["label"], r["depths"]) for r in meta["rows"]] == [
        ("Process 1000", "Thread 1000", 4), ("GPU 0", "Stream 7", 1)]
    assert [s["start"] for s in meta["steps"]] == [0, 1_000_000, 2_000_000]
    # Whole trace at 100 px: 30 µs per pixel; the 1.5 µs kernels and 5-10 µs launches fold.
    t = client.get("/api/timeline", params={"trace": TRACE, "start": 0,
                                            "end": meta["end"], "width": 100}).json()
    shown = len(t["events"]["id"]) + sum(t["aggregates"]["count"])
    assert shown == 21
    assert min(t["events"]["dur"]) >= (meta["end"] / 100)
    assert sum(t["aggregates"]["count"]) == 9  # 6 launches + 3 short kernels
    assert t["counters"][0]["label"] == "GPU 0 utilization"
    assert max(t["counters"][0]["values"]) <= 1.0
    # Zoomed on step 0's first launch: everything is drawn one by one, with its flow arrow.
    z = client.get("/api/timeline", params={"trace": TRACE, "start": 0, "end": 250_000,
                                            "width": 2000}).json()
    assert sum(z["aggregates"]["count"]) == 0
    assert len(z["flows"]["from"]) == 1
    ev = client.get("/api/event", params={"trace": TRACE, "id": z["flows"]["to"][0]}).json()
    assert ev["name"] == EVIL_KERNEL and ev["table"] == "device"
    assert ev["dur"] == 300_000 and ev["flow"]["name"] == "cudaLaunchKernel"
    assert ev["args"]["grid_x"] == 4
    back = client.get("/api/event", params={"trace": TRACE, "id": ev["flow"]["id"]}).json()
    assert back["flow"]["id"] == ev["id"]


def test_search_and_export(client: Any) -> None:
    wait_ready(client)
    s = client.get("/api/search", params={"trace": TRACE, "q": "SCRIPT>alert"}).json()
    assert s["count"] == 3
    r = client.get("/api/export", params={"trace": TRACE, "start": 0, "end": 1_000_000})
    assert r.status_code == 200 and "attachment" in r.headers["content-disposition"]
    events = [e for e in r.json()["traceEvents"] if e["ph"] == "X"]
    assert len(events) == 7  # step 0: step, 2 ops, 2 launches, 2 kernels
    assert {e["name"] for e in events} >= {EVIL_OP, EVIL_KERNEL}
    assert min(e["ts"] for e in events) == pytest.approx(min(e["ts"] for e in events))


@pytest.mark.parametrize("path", [
    "/api/report?trace=../../../../etc/passwd",
    "/api/report?trace=%2e%2e%2f%2e%2e%2fetc%2fpasswd",
    "/api/report?trace=run1/../../etc/passwd",
    "/api/report?trace=/etc/passwd",
    "/assets/..%2f..%2f..%2fetc%2fpasswd",
    "/assets/%2e%2e%2f%2e%2e%2fapp.js",
    "/assets/..%5c..%5cpyproject.toml",
    "/../../etc/passwd",
    "/%2e%2e/%2e%2e/etc/passwd",
])
def test_no_path_traversal(client: Any, path: str) -> None:
    r = client.get(path)
    assert r.status_code in (404, 503)
    assert "root:" not in r.text


@pytest.mark.parametrize("query", [
    "/api/report",
    "/api/timeline?trace=" + TRACE + "&start=abc&end=10",
    "/api/timeline?trace=" + TRACE + "&start=0&end=nan",
    "/api/timeline?trace=" + TRACE + "&start=10&end=5",
    "/api/timeline?trace=" + TRACE + "&start=0&end=10&width=0",
    "/api/timeline?trace=" + TRACE + "&start=0&end=10&width=99999999",
    "/api/timeline?trace=" + TRACE + "&start=0&end=1e400",
    "/api/event?trace=" + TRACE + "&id=-1",
    "/api/event?trace=" + TRACE + "&id=x",
    "/api/search?trace=" + TRACE + "&q=",
    "/api/search?trace=" + TRACE + "&q=" + "a" * 201,
    "/api/export?trace=" + TRACE + "&start=5&end=5",
])
def test_malformed_parameters_are_4xx(client: Any, query: str) -> None:
    wait_ready(client)
    r = client.get(query)
    assert 400 <= r.status_code < 500, (query, r.status_code, r.text)
    assert "error" in r.json()


def test_event_out_of_range_is_404(client: Any) -> None:
    wait_ready(client)
    assert client.get("/api/event", params={"trace": TRACE, "id": 10**9}).status_code == 404


def test_security_headers(client: Any) -> None:
    r = client.get("/api/runs")
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "script-src 'self'" in csp
    assert "unsafe-eval" not in csp and "http" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"


def test_bad_trace_reports_error_not_500(tmp_path: Path) -> None:
    (tmp_path / "bad.pt.trace.json").write_text("{not json")
    with TestClient(create_app(ViewConfig(root=str(tmp_path), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            r = c.get("/api/report", params={"trace": "bad.pt.trace.json"})
            if r.status_code != 202:
                break
            time.sleep(0.05)
        assert r.status_code == 422
        assert "bad.pt.trace.json" in r.json()["error"]


def test_single_file_root(logdir: Path) -> None:
    with TestClient(create_app(ViewConfig(root=str(logdir / TRACE), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        runs = c.get("/api/runs").json()["runs"]
        assert runs[0]["workers"][0]["spans"][0]["trace"] == "worker0.1.pt.trace.json.gz"


def test_store_evicts_least_recently_used(tmp_path: Path) -> None:
    from stepscope.server.store import TraceStore

    paths = [str(dashboard_trace(tmp_path, f"w{i}.1.pt.trace.json")) for i in range(3)]
    store = TraceStore(use_cache=False, max_loaded=2)
    try:
        for p in paths:
            entry = store.get(p)
            deadline = time.monotonic() + 30
            while entry.state not in ("ready", "error") and time.monotonic() < deadline:
                time.sleep(0.02)
            assert entry.state == "ready"
        assert list(store._entries) == paths[1:]
        assert store.get(paths[1]).state == "ready"  # a hit moves it to the end
        assert list(store._entries) == [paths[2], paths[1]]
    finally:
        store.close()


def test_server_answers_while_a_trace_loads(logdir: Path, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    import threading

    import stepscope.formats

    release = threading.Event()
    real = stepscope.formats.load_trace

    def slow_load(path: str, **kwargs: Any) -> Any:
        kwargs["progress"](5, 10)
        release.wait(30)
        return real(path, use_cache=False)

    monkeypatch.setattr(stepscope.formats, "load_trace", slow_load)
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False)),
                    base_url="http://127.0.0.1:6006") as c:
        r = c.get("/api/report", params={"trace": TRACE})
        assert r.status_code == 202
        deadline = time.monotonic() + 10
        while c.get("/api/progress", params={"trace": TRACE}).json()["done"] != 5:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        # the load is blocked (until release is set): everything else still answers, which
        # these answers arriving at all proves, whatever the machine's speed
        p = c.get("/api/progress", params={"trace": TRACE}).json()
        assert (p["state"], p["done"], p["total"]) == ("reading", 5, 10)
        assert c.get("/api/runs").status_code == 200
        assert c.get("/api/timeline/meta", params={"trace": TRACE}).status_code == 202
        release.set()
        assert wait_ready(c)["breakdown"]["step_avg_us"] == pytest.approx(1000.0)


def test_sql_endpoint(client: Any, logdir: Path) -> None:
    """The Query page's API: rows as lists in column order (two columns may share a name),
    which columns are numeric, the count; a bad query is a 400 with DuckDB's message; only
    the logdir's traces can be named."""
    pytest.importorskip("duckdb")
    import stepscope

    query = "SELECT name, name, count(*) AS n FROM kernels GROUP BY name ORDER BY n DESC, name"
    r = client.get("/api/sql", params={"trace": TRACE, "q": query})
    assert r.status_code == 200, r.text
    body = r.json()
    want = stepscope.sql(str(logdir / TRACE), query)
    assert body["columns"] == ["name", "name", "n"] and body["numeric"] == [False, False, True]
    assert body["row_count"] == want.num_rows > 0 and body["truncated"] is False
    names = want.column(0).to_pylist()
    assert body["rows"] == [[k, k, n] for k, n in zip(names, want.column(2).to_pylist(),
                                                     strict=True)]
    bad = client.get("/api/sql", params={"trace": TRACE, "q": "SELECT nme FROM kernels"})
    assert bad.status_code == 400 and 'Referenced column "nme" not found' in bad.json()["error"]
    files = client.get("/api/sql", params={"trace": TRACE,
                                            "q": "SELECT * FROM read_csv('/etc/passwd')"})
    assert files.status_code == 400 and "disabled by configuration" in files.json()["error"]
    assert client.get("/api/sql", params={"trace": "../x.json", "q": "SELECT 1"}
                      ).status_code == 404
