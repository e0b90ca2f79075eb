"""Two threads reading traces at once (the dashboard's load pool) each get their own events."""

from __future__ import annotations

import threading
from typing import Any

from tests.conftest import shared_trace

from stepscope.formats import load_trace
from stepscope.report.build import build_report


def _report(path: str) -> dict[str, Any]:
    return build_report(load_trace(path, use_cache=False), top=50).to_json()


def test_concurrent_loads_equal_a_lone_load() -> None:
    path = str(shared_trace("kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz"))
    alone = _report(path)
    got: list[dict[str, Any]] = []
    threads = [threading.Thread(target=lambda: got.append(_report(path))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2
    for rep in got:  # the shapes (string ids) were garbled: MFU 6.3 % instead of 19.0 %
        assert rep["efficiency"] == alone["efficiency"]
        assert rep["breakdown"] == alone["breakdown"]
