"""docs/advice.md's "Audit on real traces" table is what the rules do today: every advisor
rule over every real trace of ../shared/traces (scripts/audit_rules.py). A rule change that
moves a cell (fires / silent / severity) must update the table and the audit's verdicts."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from tests.conftest import ROOT, SHARED_TRACES, load_script

START, END = "<!-- audit-table -->", "<!-- /audit-table -->"


def _script() -> ModuleType:
    return load_script("audit_rules")


def _documented() -> str:
    text = (ROOT / "docs" / "advice.md").read_text(encoding="utf-8")
    return text[text.index(START) + len(START):text.index(END)].strip("\n") + "\n"


@pytest.mark.skipif(not SHARED_TRACES.is_dir(), reason="../shared/traces is absent")
def test_the_documented_audit_table_is_what_the_rules_do() -> None:
    audit = _script()
    rows, _ = audit.matrix(Path(SHARED_TRACES))
    assert audit.render(rows) == _documented(), (
        "a rule moved a cell of docs/advice.md's audit table: regenerate it with "
        "scripts/audit_rules.py and review the firings it changed")
