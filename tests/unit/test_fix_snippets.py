"""Every fix snippet of the advisor parses, and every torch API it names exists (torch 2.13)."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import warnings
from typing import Any

import pytest

import stepscope.advice.rules as rules


def _snippets() -> list[tuple[str, str]]:
    out = []
    for m in pkgutil.walk_packages(rules.__path__, prefix="stepscope.advice.rules."):
        mod = importlib.import_module(m.name)
        short = m.name.rsplit(".", 1)[-1]
        out += [(f"{short}.{k}", v) for k, v in vars(mod).items()
                if k.startswith("CODE") and isinstance(v, str)]
    return out


SNIPPETS = _snippets()


def _resolve(dotted: str) -> Any:
    torch = pytest.importorskip("torch")
    obj: Any = torch
    for part in dotted.split(".")[1:]:
        try:
            obj = getattr(obj, part)
        except AttributeError:
            obj = importlib.import_module(f"{obj.__name__}.{part}")
    return obj


@pytest.mark.parametrize(("name", "code"), SNIPPETS, ids=[n for n, _ in SNIPPETS])
def test_snippet_parses_and_names_real_apis(name: str, code: str) -> None:
    ast.parse(code)
    for dotted in sorted(set(re.findall(r"torch(?:\.[A-Za-z_]\w*)+", code))):
        assert _resolve(dotted) is not None, dotted
    assert "torch.cuda.amp" not in code  # deprecated since torch 2.4: torch.amp


def test_grad_scaler_spelling_is_not_deprecated() -> None:
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.amp.GradScaler("cuda", enabled=False)
