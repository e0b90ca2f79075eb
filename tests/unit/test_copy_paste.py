"""Everything the terminal output tells a user to paste still works when pasted.

Every fix snippet of every advice rule, rendered as the report renders it at 80 and 60
columns, compiles (Python) or parses in bash with the same words (shell command lines such as
trtexec's); the demo's commands and the pip hints are whole, quoted shell commands.
"""

from __future__ import annotations

import ast
import importlib
import io
import itertools
import pkgutil
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

import stepscope.advice.rules as rules
from stepscope.report.text.layout import code_block, fold_code, is_python

SRC = Path(__file__).resolve().parents[2] / "src" / "stepscope"
INDENT = 5  # the findings section's code indent


def _text(node: ast.expr) -> str | None:
    """A string constant, an implicit concatenation, or an f-string with each placeholder
    filled by a plausible word (the optimizer's class name, a dtype, ...)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "AdamW" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text(node.left), _text(node.right)
        return None if left is None or right is None else left + right
    return None


def _snippets() -> list[tuple[str, str]]:
    """Every snippet a rule can print: module constants named CODE*, ``code=`` arguments, and
    the code half of ``(fix, code)`` pairs that rules' ``_fix`` helpers return."""
    out: dict[str, str] = {}
    for m in pkgutil.walk_packages(rules.__path__, prefix="stepscope.advice.rules."):
        mod = importlib.import_module(m.name)
        short = m.name.removeprefix("stepscope.advice.rules.")
        out |= {v: f"{short}.{k}" for k, v in vars(mod).items()
                if k.startswith("CODE") and isinstance(v, str)}
        if mod.__file__ is None:
            continue
        tree = ast.parse(Path(mod.__file__).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            found: list[ast.expr] = []
            if isinstance(node, ast.keyword) and node.arg == "code":
                found.append(node.value)
            if (isinstance(node, ast.FunctionDef) and node.name == "_fix"):
                found += [r.value.elts[1] for r in ast.walk(node) if isinstance(r, ast.Return)
                          and isinstance(r.value, ast.Tuple) and len(r.value.elts) == 2]
            for value in found:
                text = _text(value)
                if text is not None:
                    out.setdefault(text, f"{short}:{getattr(value, 'lineno', 0)}")
    return sorted((name, code) for code, name in out.items())


SNIPPETS = _snippets()


def _rendered(code: str, width: int) -> str:
    console = Console(width=width, record=True, color_system=None, file=io.StringIO())
    code_block(console, code, INDENT)
    lines = console.export_text(styles=False).splitlines()
    assert all(line.startswith(" " * INDENT) for line in lines if line), lines
    assert all(line == line.rstrip() for line in lines), "trailing spaces"
    return "\n".join(line[INDENT:] for line in lines)


def _bash_parses(text: str) -> None:
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    done = subprocess.run([bash, "-n"], input=text, text=True, capture_output=True, check=False)
    assert done.returncode == 0, (text, done.stderr)


def test_snippets_were_found() -> None:
    # the constants, the inline trtexec commands and the optimizer's per-class lines
    assert len(SNIPPETS) > 40
    assert sum(not is_python(c) for _, c in SNIPPETS) >= 5  # trtexec, env-variable lines
    assert any("fused=True" in c for _, c in SNIPPETS)


@pytest.mark.parametrize("width", [80, 60])
@pytest.mark.parametrize(("name", "code"), SNIPPETS, ids=[n for n, _ in SNIPPETS])
def test_rendered_snippet_pastes(name: str, code: str, width: int) -> None:
    shown = _rendered(code, width)
    if width == 80:  # narrower, a line with no place to break stays whole (soft-wrapped)
        assert all(len(line) <= width - INDENT for line in shown.splitlines()), shown
    if is_python(code):
        ast.parse(shown)
        # the same program: folding moved only whitespace and comments
        assert ast.dump(ast.parse(shown)) == ast.dump(ast.parse(code))
    else:  # not Python: then a command line, not Python with a syntax error
        assert re.match(r"^(\w+=\S+ )*(trtexec|sudo|python|nsys|ncu|pip) ", code), code
        _bash_parses(shown)
        # bash removes backslash-newline: the same words as the one-line command
        assert shlex.split(shown.replace("\\\n", " "), comments=True) == shlex.split(
            code, comments=True)


def test_folding_breaks_only_at_separators() -> None:
    line = ("trtexec --onnx='my model.onnx' --minShapes=input:1x3x224x224 "
            "--optShapes=input:8x3x224x224")
    assert fold_code(line, 40) == ["trtexec --onnx='my model.onnx' \\",
                                   "    --minShapes=input:1x3x224x224 \\",
                                   "    --optShapes=input:8x3x224x224"]
    # a token longer than the width stays whole, on a line of its own
    assert fold_code("cmd " + "x" * 50, 20) == ["cmd \\", "    " + "x" * 50]
    code = "y = f(aaaa, 'b, c', dddd)  # a comment that does not fit"
    assert fold_code(code, 24) == ["# a comment that does", "# not fit",
                                   "y = f(aaaa, 'b, c',", "    dddd)"]
    # no comma inside brackets: the line stays whole rather than breaking the program
    assert fold_code("x = " + "a" * 30, 20) == ["x = " + "a" * 30]


def test_demo_commands_are_whole_quoted_commands(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from stepscope.demo.run import DemoResult, _explore

    monkeypatch.chdir(tmp_path)
    slow = tmp_path / "my logs" / "before" / ("w" * 60 + ".pt.trace.json.gz")
    fast = tmp_path / "my logs" / "after" / ("v" * 60 + ".pt.trace.json.gz")
    console = Console(width=80, record=True, color_system=None, file=io.StringIO())
    _explore(console, DemoResult(str(slow), str(fast), 1.0, 2.0))
    lines = console.export_text(styles=False).splitlines()
    commands = [shlex.split(line) for line in lines
                if re.match(r"^  \S*stepscope (report|diff) ", line)]
    assert [c[1:] for c in commands] == [
        ["report", f"my logs/after/{fast.name}"],
        ["diff", f"my logs/before/{slow.name}", f"my logs/after/{fast.name}"]]
    for line in lines:
        if re.match(r"^  \S*stepscope ", line):
            _bash_parses(line)


def test_pip_hints_are_quoted() -> None:
    """zsh expands the brackets of an unquoted `pip install stepscope[s3]`."""
    hints = []
    for path in SRC.rglob("*.py"):
        hints += re.findall(r"pip install ((?:'[^']*'|[\w.\[\]-]+)(?: (?:'[^']*'|[\w.\[\]-]+))*)",
                            path.read_text(encoding="utf-8"))
    assert len(hints) >= 5
    for hint in hints:
        words = shlex.split(hint)
        assert all("[" not in w or f"'{w}'" in hint for w in words), hint
        _bash_parses(f"pip install {hint}")


def test_prose_breaks_at_spaces_and_keeps_paths_whole() -> None:
    from rich.text import Text

    from stepscope.report.text.layout import hanging

    path = "/data/runs/" + "long_folder_name/" * 4 + "worker0.1623143089861.pt.trace.json.gz"
    console = Console(width=40, record=True, color_system=None, file=io.StringIO())
    hanging(console, "  • ", Text(f"skipped capture: {path}: not a trace stepscope can read"))
    lines = console.export_text(styles=False).splitlines()
    assert lines == ["  • skipped capture:", f"    {path}:",
                     "    not a trace stepscope can read"]


def test_units_stay_with_their_numbers() -> None:
    from rich.text import Text

    from stepscope.report.text.layout import hanging

    body = Text("3.0 synchronising calls per step block the CPU for 2.18 ms per step (6.2 % "
                "of the step), reserved up to 768 KiB; 3 steps")
    for width in range(30, 90):
        console = Console(width=width, record=True, color_system=None, file=io.StringIO())
        hanging(console, "   • ", body)
        lines = console.export_text(styles=False).splitlines()
        assert " ".join(" ".join(lines).split()) == "• " + body.plain
        for a, b in itertools.pairwise(lines):  # "(6.2" / "% of the step" was the issue
            assert not (re.search(r"\d$", a) and re.match(r"\s*(%|ms|KiB)(\s|\)|;|,|$)", b)), lines
