"""The single-file HTML report: self-contained, escaped, capped, CSP by hash."""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import inlined_data
from tests.dashboard_builders import EVIL_KERNEL, EVIL_OP, dashboard_trace

from stepscope.formats import load_trace
from stepscope.report.build import build_report
from stepscope.report.bundle import find_bundle

pytestmark = pytest.mark.skipif(find_bundle() is None, reason="front end not built (setup.sh)")


def _write(tmp_path: Path, cap: int = 100_000) -> str:
    from stepscope.report.html import write_html

    report = build_report(load_trace(str(dashboard_trace(tmp_path)), use_cache=False))
    out = tmp_path / "r.html"
    write_html(report, str(out), timeline_cap=cap)
    return out.read_text(encoding="utf-8")


def test_self_contained_and_escaped(tmp_path: Path) -> None:
    html = _write(tmp_path)
    # No network: nothing loaded by URL, no external script/style/font.
    assert not re.search(r'<(script|link|img)[^>]+(src|href)=', html)
    assert "@import" not in html and "@font-face" not in html
    # Hostile trace strings never appear raw: only as JSON escapes inside the data block.
    assert EVIL_OP not in html and "<img src=x" not in html
    assert html.count("</script>") == 2
    data = inlined_data(html)
    assert data["report"]["kernels"][0]["name"] in (EVIL_KERNEL, "ampere_sgemm_64x64_nn")
    assert EVIL_OP in data["timeline"]["strings"]
    assert data["report"] == build_report(
        load_trace(str(tmp_path / "worker0.1.pt.trace.json.gz"), use_cache=False)).to_json()
    # No inline event handlers anywhere in the markup we write.
    assert not re.search(r"<[^>]+\son\w+=", html.split('id="stepscope-data">')[0])


def test_csp_admits_only_the_inlined_script(tmp_path: Path) -> None:
    html = _write(tmp_path)
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert csp is not None
    script = re.search(r'<script type="module">(.*)</script></body>', html, re.S)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp.group(1)
    assert "connect-src 'none'" in csp.group(1) and "unsafe-inline'; " not in \
        csp.group(1).split("style-src")[0]


def test_timeline_cap_is_stated_and_keeps_the_longest(tmp_path: Path) -> None:
    data = inlined_data(_write(tmp_path, cap=5))["timeline"]
    assert (data["cap"], data["kept"], data["events"]) == (5, 5, 21)
    # the 3 steps (1000 µs) and the 3 kernels of 300 µs... minus one: longest first
    assert sorted(data["columns"]["dur"], reverse=True)[:3] == [1_000_000] * 3
    assert min(data["columns"]["dur"]) >= 300_000


def test_kernels_by_operator(tmp_path: Path) -> None:
    rows = build_report(load_trace(str(dashboard_trace(tmp_path)), use_cache=False)).to_json()[
        "kernels_by_operator"]
    # the hostile kernel is launched by aten::mm, the sgemm by the outer (hostile) op
    assert [(r["kernel"], r["operator"], r["calls"], r["total_us"]) for r in rows] == [
        (EVIL_KERNEL, "aten::mm", 3, 900.0), ("ampere_sgemm_64x64_nn", EVIL_OP, 3, 4.5)]
    assert rows[1]["mean_us"] == 1.5


def test_operators_by_stack(tmp_path: Path) -> None:
    rows = build_report(load_trace(str(dashboard_trace(tmp_path)), use_cache=False)).to_json()[
        "operators_by_stack"]
    got = {(r["name"], r["call_stack"]): (r["calls"], r["device_total_us"]) for r in rows}
    assert got[(EVIL_OP, "train.py(42): step;model.py(7): forward")] == (3, 904.5)
    assert got[("aten::mm", None)] == (3, 900.0)


def test_front_end_never_injects_markup() -> None:
    """Trace strings reach the DOM only as text: no innerHTML-style sinks, no eval."""
    src = Path(__file__).resolve().parents[2] / "frontend" / "src"
    if not src.is_dir():
        pytest.skip("no frontend/ sources")
    for f in src.rglob("*.ts*"):
        text = f.read_text(encoding="utf-8")
        for sink in ("dangerouslySetInnerHTML", "innerHTML", "outerHTML", "insertAdjacentHTML",
                     "document.write", "eval(", "new Function"):
            assert sink not in text, (f.name, sink)


def test_operators_by_stack_group_as_a_sort_of_every_key_does() -> None:
    """The (name, stack) groups come from two table passes (grouping.unique_pairs): the
    same rows, in the same order, as np.unique over name * n + stack + 1 gives, on a real
    trace recorded with stacks."""
    from tests.conftest import shared_trace

    from stepscope.analysis.events.links import Links
    from stepscope.analysis.events.optree import OpTree
    from stepscope.analysis.trace import operators_stack

    path = shared_trace("kineto_resnet50/num_workers_0/worker0.1623143089861.pt.trace.json.gz")
    trace = load_trace(str(path), use_cache=False)
    tree = OpTree(trace, Links(trace))
    rows = operators_stack.operators_by_stack(trace, tree)
    times = tree.times
    idx = np.flatnonzero(times.is_operator)
    n = len(trace.strings) + 1
    key = trace.host.name[idx].astype(np.int64) * n + trace.host.call_stack[idx] + 1
    ukey = np.unique(key)
    assert sorted((r.name, r.call_stack or "") for r in rows) == sorted(
        (trace.name(int(k // n)), trace.name(int(k % n) - 1) if k % n else "") for k in ukey)
    assert sum(r.calls for r in rows) == len(idx) and any(r.call_stack for r in rows)
