"""Property tests: a saved baseline with any values in any key gives a RunSummary or one error.

``read_report`` (the reader of ``stepscope.report/1`` files and ``--save-baseline`` files for
``stepscope diff``) returns a RunSummary or raises a StepscopeError with a one-line message,
never anything else, and ``diff_runs`` and the JSON renderer on what it returns never raise.
"""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.diff_builders import training_trace

from stepscope.analysis.compare.diff import diff_runs
from stepscope.errors import StepscopeError
from stepscope.report.diff_load import baseline_json, read_report, trace_summary_and_report
from stepscope.report.json.diff import render_diff_json

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow,
                                           HealthCheck.function_scoped_fixture])

VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=5),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(),
                                                         max_size=2),
)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = training_trace(tmp_path_factory.mktemp("fz"), "t.json", seed=1, steps=4)
    summary, doc = trace_summary_and_report(str(path), use_cache=False)
    return baseline_json(doc, summary)


def _paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:2]):
            out += _paths(v, (*prefix, i))
    return out


@SETTINGS
@given(data=st.data())
def test_mutated_reports_fail_cleanly(report: dict[str, Any], data: st.DataObject) -> None:
    doc = copy.deepcopy(report)
    paths = _paths(doc)
    for _ in range(data.draw(st.integers(1, 4))):
        path = data.draw(st.sampled_from(paths))
        parent = doc
        try:
            for key in path[:-1]:
                parent = parent[key]
            if data.draw(st.booleans()):
                parent[path[-1]] = data.draw(VALUES)
            elif isinstance(parent, dict):
                parent.pop(path[-1], None)
        except (KeyError, IndexError, TypeError):
            continue
    try:
        summary = read_report("fuzz.json", msgspec.json.encode(doc))
    except StepscopeError as exc:
        assert "fuzz.json" in str(exc) and "\n" not in str(exc)
        return
    render_diff_json(diff_runs(summary, summary))


def test_unmutated_report_reads(report: dict[str, Any]) -> None:
    s = read_report("r.json", msgspec.json.encode(report))
    assert s.n_steps == 4 and s.kernels and s.operators and s.complete
    assert s.kernels[0].per_step is not None and len(s.kernels[0].per_step) == 4
