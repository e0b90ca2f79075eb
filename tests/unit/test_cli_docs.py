"""docs/cli.md's option tables are the commands' own argparse definitions (no drift)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from tests.conftest import load_script

from stepscope.cli.main import COMMANDS


def _gen() -> ModuleType:
    return load_script("gen_cli_docs")


def test_every_command_has_its_generated_table() -> None:
    gen = _gen()
    assert gen.documented(gen.DOC.read_text(encoding="utf-8")) == set(COMMANDS)


def test_tables_equal_the_argparse_definitions() -> None:
    """Run `python scripts/gen_cli_docs.py` after changing an option."""
    gen = _gen()
    doc = gen.DOC.read_text(encoding="utf-8")
    assert gen.render(doc) == doc


def test_every_option_has_help() -> None:
    gen = _gen()
    for name in COMMANDS:
        for line in gen.table(name).splitlines()[2:]:
            assert not line.endswith("|  |"), (name, line)


def test_dashboard_doc_lists_every_api_endpoint() -> None:
    import re

    root = Path(__file__).resolve().parents[2]
    app = (root / "src" / "stepscope" / "server" / "app.py").read_text(encoding="utf-8")
    doc = (root / "docs" / "dashboard.md").read_text(encoding="utf-8")
    routes = set(re.findall(r'Route\("/(api/[a-z/]+)"', app))
    assert routes and all(f"`{r}" in doc for r in routes), routes


def test_sections_stay_under_their_command() -> None:
    """No section twice, each table once, under its own command's heading, and each
    option once in its table."""
    import re

    doc = _gen().DOC.read_text(encoding="utf-8")
    headings = re.findall(r"^#+ .*$", doc, re.M)
    assert len(headings) == len(set(headings)), headings
    for m in re.finditer(r"<!-- options: ([a-z]+) -->\n(.*?)<!-- /options -->", doc, re.S):
        above = re.findall(r"^## `stepscope ([a-z]+)", doc[:m.start()], re.M)
        assert above[-1] == m.group(1), (m.group(1), above[-1])
        options = re.findall(r"^\| `([^` ]+)", m.group(2), re.M)
        assert len(options) == len(set(options)), (m.group(1), options)
    # the line after each table is a blank line or the next heading: no stray fragment
    for m in re.finditer(r"<!-- /options -->\n(.*)", doc):
        assert m.group(1) == "" or m.group(1).startswith("#"), m.group(1)
