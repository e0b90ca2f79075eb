from __future__ import annotations

import os
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED_TRACES = Path(os.environ.get("STEPSCOPE_SHARED_TRACES", ROOT.parent / "shared" / "traces"))


@pytest.fixture(autouse=True)
def _isolated_cache(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Never touch the user's ~/.cache from tests; let internal errors raise."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))
    # `report` run in-process (main([...])) must not change the test process's allocator
    # for the tests after it (stepscope.heap; tests/unit/test_heap.py checks it alone)
    monkeypatch.setenv("STEPSCOPE_KEEP_MALLOC", "1")
    # Our own bugs must surface as exceptions in tests, not as the one-line user message.
    monkeypatch.setenv("STEPSCOPE_DEBUG", "1")


def load_script(name: str) -> ModuleType:
    """A script of scripts/ (not a package) imported as a module, for its tests."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_in_own_loop(fn: Any, *args: Any) -> Any:
    """``anyio.run(fn, *args)`` on a thread of its own: the browser tests' Playwright
    session keeps an event loop running in the main thread for the rest of the suite."""
    from concurrent.futures import ThreadPoolExecutor

    import anyio

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, fn, *args).result()


def shared_trace(relative: str) -> Path:
    """Path of a real trace under ../shared/traces, or skip the test with the reason."""
    path = SHARED_TRACES / relative
    if not path.exists():
        pytest.skip(f"real trace not available: {path} (needs ../shared/traces beside the repo)")
    return path


def inlined_data(html: str) -> dict[str, Any]:
    """The data block a single-file HTML page inlines (report/html.py render_page)."""
    import json
    import re

    m = re.search(r'<script type="application/json" id="stepscope-data">(.*?)</script>', html,
                  re.S)
    assert m is not None, "no stepscope-data block"
    return dict(json.loads(m.group(1)))
