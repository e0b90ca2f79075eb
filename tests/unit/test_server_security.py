"""The dashboard against a hostile web page and hostile requests.

- Host checks (DNS rebinding): only the names the server was started for are answered.
- Traversal: every parameter naming a trace, a run or an asset, with the usual tricks.
- Bad query parameters: non-numeric, negative, huge, NaN, empty, repeated.
- A bounded loopback load test: a real uvicorn on an ephemeral 127.0.0.1 port, 200 requests
  over 10 threads; every answer is 200, 202 or 4xx, never 5xx.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import warnings
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

with warnings.catch_warnings():  # starlette asks for httpx2; httpx still works
    warnings.simplefilter("ignore")
    from starlette.testclient import TestClient

from tests.dashboard_builders import dashboard_trace

from stepscope.server.app import ViewConfig, allowed_hosts, create_app, host_name

TRACE = "run1/worker0.1.pt.trace.json.gz"
LOCAL = "http://127.0.0.1:6006"


@pytest.fixture()
def logdir(tmp_path: Path) -> Path:
    (tmp_path / "run1").mkdir()
    dashboard_trace(tmp_path / "run1")
    (tmp_path / "secret.txt").write_text("not a trace")
    return tmp_path


@pytest.fixture()
def client(logdir: Path) -> Iterator[Any]:
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False)),
                    base_url=LOCAL) as c:
        yield c


def wait_ready(client: Any, trace: str = TRACE) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        r = client.get("/api/report", params={"trace": trace})
        if r.status_code == 200:
            return
        assert r.status_code == 202, r.text
        time.sleep(0.05)
    raise AssertionError("trace never loaded")


# --- Host checks -------------------------------------------------------------------------

@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.1:6006", "localhost", "LOCALHOST:6006",
                                  "localhost.", "[::1]", "[::1]:6006"])
def test_loopback_names_are_answered(client: Any, host: str) -> None:
    r = client.get("/api/config", headers={"host": host})
    assert r.status_code == 200, (host, r.text)


@pytest.mark.parametrize("host", ["evil.example", "evil.example:6006", "127.0.0.1.evil.example",
                                  "localhost.evil.example", "testserver", "", "[::1",
                                  "0.0.0.0", "10.0.0.5:6006", "127.0.0.2"])
def test_rebinding_names_are_refused(client: Any, host: str) -> None:
    for path in ("/", "/api/config", "/api/runs", f"/api/report?trace={TRACE}",
                 "/assets/x.js"):
        r = client.get(path, headers={"host": host})
        assert r.status_code == 403, (host, path, r.status_code)
        assert "trace" not in r.text.lower() or "host" in r.text.lower()
        assert r.headers["content-security-policy"].startswith("default-src 'none'")


def test_the_host_given_is_answered(logdir: Path) -> None:
    app = create_app(ViewConfig(root=str(logdir), use_cache=False, host="devbox.lan"))
    with TestClient(app, base_url="http://devbox.lan:6006") as c:
        assert c.get("/api/config").status_code == 200
        assert c.get("/api/config", headers={"host": "localhost:6006"}).status_code == 200
        assert c.get("/api/config", headers={"host": "other.lan"}).status_code == 403


def test_host_names_parsed() -> None:
    assert host_name("[::1]:6006") == "::1"
    assert host_name("LocalHost.:80") == "localhost"
    assert host_name("::1") == "::1"  # bare IPv6 (no port can be told apart)
    check = allowed_hosts("0.0.0.0")  # every interface: any address literal, never a name
    assert check("192.168.1.7") and check("::1") and check("localhost")
    assert not check("evil.example")
    assert allowed_hosts("::1")("::1") and not allowed_hosts("127.0.0.1")("evil.example")


# --- traversal ---------------------------------------------------------------------------

TRAVERSALS = [
    "../secret.txt", "..%2Fsecret.txt", "run1/../secret.txt", "run1/../../etc/passwd",
    "/etc/passwd", "secret.txt", "run1/./worker0.1.pt.trace.json.gz",
    "run1//worker0.1.pt.trace.json.gz", "run1\\worker0.1.pt.trace.json.gz",
    "RUN1/worker0.1.pt.trace.json.gz", "run1/worker0.1.pt.trace.json.gz\x00.txt",
    "%2e%2e/secret.txt", "....//secret.txt", "~/.ssh/id_rsa", "file:///etc/passwd", ".",
    "..", "run1", "run1/", " " + TRACE, TRACE + " ", "a" * 5000,
]
TRACE_ENDPOINTS = ["/api/progress", "/api/report", "/api/timeline/meta", "/api/event",
                   "/api/search", "/api/timeline", "/api/export"]


@pytest.mark.parametrize("bad", TRAVERSALS)
def test_traversal_never_reaches_a_file(client: Any, bad: str) -> None:
    extra = {"start": "0", "end": "10", "id": "0", "q": "mm"}
    for ep in TRACE_ENDPOINTS:
        r = client.get(ep, params={"trace": bad, **extra})
        assert r.status_code == 404, (ep, bad, r.status_code)
        assert "not a trace" not in r.text
    for params in ({"base": bad, "new": TRACE}, {"base": TRACE, "new": bad}):
        r = client.get("/api/diff", params=params)
        assert r.status_code == 404, (params, r.status_code)
    r = client.get("/api/run", params={"run": bad})
    assert r.status_code in (400, 404), (bad, r.status_code)
    r = client.get("/assets/" + urllib.parse.quote(bad, safe=""))  # "/assets/.." is "/"
    assert r.status_code in ((200, 404, 503) if bad in (".", "..") else (404, 503)), bad
    assert "not a trace" not in r.text


@pytest.mark.parametrize("path", ["/assets/../secret.txt", "/assets/..%2F..%2Fsecret.txt",
                                  "/assets/%2e%2e%2fsecret.txt", "/../secret.txt",
                                  "/api/../../secret.txt", "//etc/passwd"])
def test_path_tricks_in_the_url(client: Any, path: str) -> None:
    r = client.get(path)
    assert r.status_code in (200, 404, 503)
    assert "not a trace" not in r.text


# --- bad parameters ----------------------------------------------------------------------

BAD_NUMBERS = ["x", "", " ", "NaN", "nan", "inf", "-inf", "Infinity", "1e400", "-1",
               "99999999999999999999999999", "1e30", "0x10", "1_0", "１", "--1", "1.5.2",
               "-9223372036854775809"]


@pytest.mark.parametrize("value", BAD_NUMBERS)
def test_bad_numbers_are_4xx(client: Any, value: str) -> None:
    wait_ready(client)
    base = {"trace": TRACE}
    cases = [("/api/timeline", {"start": value, "end": "1000"}),
             ("/api/timeline", {"start": "0", "end": value}),
             ("/api/timeline", {"start": "0", "end": "1000", "width": value}),
             ("/api/event", {"id": value}),
             ("/api/export", {"start": value, "end": value})]
    for ep, params in cases:
        r = client.get(ep, params={**base, **params})
        assert r.status_code < 500, (ep, params, r.status_code, r.text)
        if r.status_code != 200:
            assert r.status_code in (400, 404), (ep, params, r.status_code)
            assert r.json()["error"], (ep, params)


def test_missing_and_repeated_parameters(client: Any) -> None:
    wait_ready(client)
    for ep in [*TRACE_ENDPOINTS, "/api/diff", "/api/run"]:
        assert client.get(ep).status_code == 400, ep
    r = client.get(f"/api/event?trace={TRACE}&id=0&id=x")  # the first value counts
    assert r.status_code in (200, 400, 404)
    for q in ("", "a" * 201):
        assert client.get("/api/search", params={"trace": TRACE, "q": q}).status_code == 400
    r = client.get("/api/timeline", params={"trace": TRACE, "start": "10", "end": "5"})
    assert r.status_code == 400


# --- bounded loopback load ---------------------------------------------------------------

def test_loopback_load(logdir: Path) -> None:
    import uvicorn

    from stepscope.cli.view import bind_socket

    sock = bind_socket("127.0.0.1", 0)
    port = sock.getsockname()[1]
    app = create_app(ViewConfig(root=str(logdir), use_cache=False))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 15
        while not server.started:
            assert time.monotonic() < deadline, "server never started"
            time.sleep(0.02)
        base = f"http://127.0.0.1:{port}"
        paths = ["/api/config", "/api/runs", f"/api/report?trace={TRACE}",
                 f"/api/progress?trace={TRACE}",
                 f"/api/timeline?trace={TRACE}&start=0&end=1000000&width=500",
                 f"/api/timeline/meta?trace={TRACE}", f"/api/event?trace={TRACE}&id=0",
                 f"/api/search?trace={TRACE}&q=mm", "/api/report?trace=../secret.txt",
                 "/api/event?trace=x&id=NaN"]

        def fetch(i: int) -> int:
            req = urllib.request.Request(base + paths[i % len(paths)])
            try:
                with urllib.request.urlopen(req, timeout=30) as r:
                    return int(r.status)
            except urllib.error.HTTPError as exc:
                return int(exc.code)

        with ThreadPoolExecutor(10) as pool:
            codes = list(pool.map(fetch, range(200)))
        assert len(codes) == 200
        assert all(c in (200, 202) or 400 <= c < 500 for c in codes), sorted(set(codes))
        evil = urllib.request.Request(base + "/api/runs", headers={"Host": "evil.example"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(evil, timeout=30)
        assert refused.value.code == 403
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


# --- the listing under load: cached, off the event loop, capped out loud -------------------

def test_listing_is_cached_until_a_directory_changes(logdir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import stepscope.server.logdir as ld

    calls: list[str] = []
    real = ld.scan

    def counting(root: str, limit: int = ld.MAX_FILES) -> Any:
        calls.append(root)
        return real(root, limit)

    monkeypatch.setattr(ld, "scan", counting)
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False)),
                    base_url=LOCAL) as c:
        for _ in range(20):
            assert c.get("/api/runs").status_code == 200
            assert c.get("/api/progress", params={"trace": TRACE}).status_code == 200
        assert len(calls) == 1  # 40 requests, one scan
        dashboard_trace(logdir / "run1", "worker1.1.pt.trace.json")  # the folder's mtime moves
        ids = [s["trace"] for w in c.get("/api/runs").json()["runs"][0]["workers"]
               for s in w["spans"]]
        assert "run1/worker1.1.pt.trace.json" in ids and len(calls) == 2


def test_a_slow_scan_does_not_hold_up_other_requests(logdir: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    import stepscope.server.logdir as ld

    entered, release = threading.Event(), threading.Event()
    real = ld.scan

    def slow(root: str, limit: int = ld.MAX_FILES) -> Any:
        entered.set()
        release.wait(20)  # a safety net only: the test releases it
        return real(root, limit)

    monkeypatch.setattr(ld, "scan", slow)
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False)),
                    base_url=LOCAL) as c:
        answers: list[int] = []
        t = threading.Thread(target=lambda: answers.append(c.get("/api/runs").status_code))
        t.start()
        assert entered.wait(20)
        r = c.get("/api/config")  # the event loop is free while the scan runs in a thread
        still_scanning = not release.is_set() and t.is_alive()
        release.set()
        t.join(30)
        assert r.status_code == 200 and still_scanning
        assert answers == [200]


def test_a_logdir_past_the_cap_says_so(logdir: Path) -> None:
    for i in range(4):
        dashboard_trace(logdir / "run1", f"w{i}.1.pt.trace.json")
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False, max_files=3)),
                    base_url=LOCAL) as c:
        runs = c.get("/api/runs").json()
        listed = [s["trace"] for r in runs["runs"] for w in r["workers"] for s in w["spans"]]
        assert runs["truncated"] is True and runs["listed"] == len(listed) == 3
        unlisted = "run1/worker0.1.pt.trace.json.gz"
        assert unlisted not in listed
        r = c.get("/api/report", params={"trace": unlisted})
        assert r.status_code == 409 and r.json()["truncated"] is True
        assert "more than 3 trace files" in r.json()["error"]
    with TestClient(create_app(ViewConfig(root=str(logdir), use_cache=False)),
                    base_url=LOCAL) as c:
        runs = c.get("/api/runs").json()
        assert runs["truncated"] is False and runs["listed"] == 5
        assert c.get("/api/report", params={"trace": "run1/nope.json"}).status_code == 404
