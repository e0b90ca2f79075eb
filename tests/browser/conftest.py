"""Browser fixtures: Debian's chromium driven by Python Playwright (never a downloaded browser)."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from stepscope.report.bundle import find_bundle

CHROMIUM = os.environ.get("STEPSCOPE_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / "out" / "screenshots"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright not installed")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (apt-get install chromium)")
    if find_bundle() is None:
        pytest.skip("front end not built (scripts/setup.sh)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture()
def page(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    pg = ctx.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    pg.errors = errors
    yield pg
    ctx.close()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)


class Server:
    def __init__(self, root: str, **config: Any) -> None:
        import uvicorn

        from stepscope.server.app import ViewConfig, create_app

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        app = create_app(ViewConfig(root=root, **config))
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port,
                                                    log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.05)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


@pytest.fixture()
def serve() -> Iterator[Any]:
    servers: list[Server] = []

    def start(root: str, **config: Any) -> Server:
        s = Server(root, **config)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()
