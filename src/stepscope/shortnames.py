"""One shortener for the names a report shows: kernels, operators, TensorRT layers.

A short name is made of whole pieces of the full one, never of fragments: it shrinks in the
order that loses least — the return type (``void ``, or ``enable_if<…, void>::type ``),
parameter lists, the lambdas and ``operator()`` of PyTorch's elementwise kernels, namespace
qualifiers (anonymous ones too), nested template arguments — and then elides *whole*
top-level template arguments (``f<a, …, d>``: the function's name stays, the arguments kept
are those that tell similar kernels apart). A name with no template that is still too long
keeps whole words from both ends: a cut never falls inside a word of letters and digits,
though it may between camelCase humps or at ``_`` (``implicit_convolve…``, never
``implic…``). :func:`short_names` shortens a list so that distinct names stay distinct.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterable, Sequence

ELLIPSIS = "…"
_WORD = frozenset(string.ascii_letters + string.digits)
_NAMESPACES = re.compile(r"\b(?:[A-Za-z_]\w*::)+(?=[A-Za-z_~])")
# what the compiler names lambdas and their call operators inside template arguments
_LAMBDA = re.compile(r"::\{lambda\((?:[^(){}]|\([^(){}]*\))*\)#\d+\}")
_CALL = re.compile(r"::operator\(\)\(\)(?: const)?")
# an anonymous namespace qualifier anywhere: at the start, after '::', '<' or ', '
_ANONYMOUS = re.compile(r"\(anonymous namespace\)::")
# A CUDA kernel returns void (a __global__ function must), so the only return types a
# demangled kernel name starts with are 'void ' and the SFINAE spelling of void,
# 'std::enable_if<COND, void>::type ' (vLLM's and FlashInfer's kernels use it).
_ENABLE_IF = "enable_if<"


def drop_return_type(name: str) -> str:
    """'void f<T>(…)' and 'std::enable_if<…, void>::type f<T>(…)' -> 'f<T>(…)'."""
    if name.startswith("void "):
        return name[5:]
    head = name.removeprefix("std::")
    if not head.startswith(_ENABLE_IF):
        return name
    angle = paren = 0  # a '>' inside parentheses is a comparison ('(((8)>(0)))')
    for i, ch in enumerate(head):
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        elif ch == "<" and not paren:
            angle += 1
        elif ch == ">" and not paren:
            angle -= 1
            if angle == 0:
                rest = head[i:]
                return rest[len(">::type "):] if rest.startswith(">::type ") else name
    return name


def strip_params(name: str) -> str:
    """Drop a trailing C++ parameter list: 'f<T>(int, float)' -> 'f<T>'."""
    if not name.endswith(")"):
        return name
    depth = 0
    for i in range(len(name) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i].rstrip() if i > 0 else name
    return name


def _inner_params(name: str) -> str:
    """Drop every parameter list that follows a name or a template ('f(int)<…>' -> 'f<…>')."""
    out: list[str] = []
    depth = 0
    for ch in name:
        if ch == "(" and (depth or (out and (out[-1][-1:].isalnum() or out[-1][-1:] in "_>"))):
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        elif not depth:
            out.append(ch)
    return "".join(out)


def collapse_templates(name: str, keep: int = 1) -> str:
    """Elide template arguments nested deeper than ``keep``: 'a<b<c>, d>' -> 'a<b<…>, d>'."""
    out = []
    depth = 0
    for ch in name:
        if ch == "<":
            if depth == keep:
                out.append("<" + ELLIPSIS)
            elif depth < keep:
                out.append(ch)
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
            if depth <= keep:
                out.append(">")
        elif depth <= keep:
            out.append(ch)
    return _ANONYMOUS.sub("", "".join(out))


def simplify(name: str) -> str:
    """The name without 'void ', parameter lists, lambdas and namespaces (templates kept)."""
    bare = _ANONYMOUS.sub("", strip_params(drop_return_type(name)))
    bare = _CALL.sub("", _LAMBDA.sub("", bare))
    bare = _inner_params(bare) if "<" in bare else bare
    return _NAMESPACES.sub("", bare)


def _template(text: str) -> tuple[str, list[str], str] | None:
    """'f<a, b<c>, d>::g' -> ('f<', ['a', 'b<c>', 'd'], '>::g'), split at the first '<'."""
    start = text.find("<")
    if start <= 0 or not (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None
    depth, last, args = 0, start + 1, []
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "<({[":
            depth += 1
        elif ch in ">)}]":
            depth -= 1
            if depth == 0:
                args.append(text[last:i].strip())
                return text[:start + 1], args, text[i:]
        elif ch == "," and depth == 1:
            args.append(text[last:i].strip())
            last = i + 1
    return None


def elide_args(text: str, width: int, must: int | None = None) -> str | None:
    """``text`` with whole top-level template arguments elided to fit ``width``: as many
    kept as fit, the last ones first (where similar kernels differ), always argument
    ``must`` when given. None when it has no template or not even 'f<…>' fits."""
    parts = _template(text)
    if parts is None:
        return None
    head, args, tail = parts
    n = len(args)
    windows: list[tuple[int, int]] = []  # kept: args[:a] and args[b:], or args[a:b] (must)
    for kept in range(n, -1, -1):
        if must is None:
            windows += [(kept - back, n - back) for back in range(kept, -1, -1)]
        else:
            windows += [(a, a + kept) for a in range(n - kept, -1, -1)
                        if a <= must < a + kept]
    for a, b in windows:
        if must is None:
            shown = args[:a] + ([ELLIPSIS] if b > a else []) + args[b:]
        else:
            shown = ([ELLIPSIS] if a > 0 else []) + args[a:b] + ([ELLIPSIS] if b < n else [])
        candidate = head + ", ".join(shown) + tail
        if len(candidate) <= width:
            return candidate
    return None


def _inside_word(text: str, i: int) -> bool:
    """A cut at ``i`` would split a word (camelCase humps are words: Kernel|Executor)."""
    if not (0 < i < len(text) and text[i - 1] in _WORD and text[i] in _WORD):
        return False
    return not (text[i - 1].islower() and text[i].isupper())


def _head(text: str, n: int) -> str:
    """The longest start of at most ``n`` characters that ends between words."""
    i = min(n, len(text))
    while i > 0 and _inside_word(text, i):
        i -= 1
    return text[:i].rstrip(" ,_")


def _tail(text: str, n: int) -> str:
    """The longest end of at most ``n`` characters that starts between words."""
    i = max(len(text) - n, 0)
    while i < len(text) and _inside_word(text, i):
        i += 1
    return text[i:].lstrip(" ,_")


def elide_middle(text: str, width: int) -> str:
    """``text`` in ``width`` characters: whole words from both ends, the middle elided."""
    return text if len(text) <= width else _ends(text, width)


def clip_end(text: str, width: int) -> str:
    """``text`` in ``width`` characters, cut after a whole word: 'a long sentence…'."""
    if len(text) <= width:
        return text
    return (_head(text, width - 1) or text[:width - 1]) + ELLIPSIS


def _ends(text: str, width: int) -> str:
    """Whole words from both ends, the middle elided; a single word longer than the width
    (nothing else can fit) is cut."""
    head = _head(text, max(width // 3, 4))
    tail = _tail(text, width - len(head) - 1)
    if not head and not tail:
        return text[:max(width - 1, 0)] + ELLIPSIS
    return head + ELLIPSIS + tail


def short_name(name: str, width: int) -> str:
    """A one-line name of at most ``width`` characters made of whole pieces of ``name``."""
    if len(name) <= width:
        return name
    short = strip_params(drop_return_type(name))
    if len(short) <= width:
        return short
    short = simplify(name)
    if len(short) <= width:
        return short
    collapsed = collapse_templates(short)
    if len(collapsed) <= width:
        return collapsed
    return elide_args(collapsed, width) or _ends(collapsed, width)


def _first_difference(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _windows(text: str, width: int, positions: Sequence[int]) -> str:
    """The start, then a window of whole words around each of ``positions`` (where similar
    names differ), the rest elided."""
    if len(text) <= width:
        return text
    head = _head(text, max(width // 5, 3)) or _head(text, width // 3)
    k = len(positions)
    room = (width - len(head) - k - 1) // k
    out, end = head, len(head)
    for pos in sorted(positions):
        start = min(pos, len(text) - 1)
        while start > end and _inside_word(text, start):  # from the word that differs
            start -= 1
        start = max(end, start)
        while start < len(text) and _inside_word(text, start):
            start += 1
        mid = _head(text[start:], room)
        start += len(text[start:]) - len(text[start:].lstrip(" ,_"))
        mid = mid.lstrip(" ,_")
        if mid:
            out += ("" if start == end else ELLIPSIS) + mid
            end = start + len(mid)
    out += ELLIPSIS if end < len(text) else ""
    return out if len(out) <= width and out != ELLIPSIS else _ends(text, width)


def _by_arg(text: str, width: int, pos: int) -> str | None:
    """``text`` in ``width`` with the template argument holding character ``pos`` kept
    (itself shortened the same way when it is too long), None when that cannot fit."""
    if len(text) <= width:
        return text
    parts = _template(text)
    if parts is None:
        return None
    head, args, tail = parts
    at, index = len(head), len(args) - 1
    for i, arg in enumerate(args):
        if pos < at + len(arg) + 2:
            index = i
            break
        at += len(arg) + 2
    if pos < len(head) or pos >= len(text) - len(tail):
        return None  # they differ in the name itself, not in an argument
    shown = elide_args(text, width, must=index)
    if shown is not None:
        return shown
    before = ELLIPSIS + ", " if index > 0 else ""
    after = ", " + ELLIPSIS if index < len(args) - 1 else ""
    room = width - len(head) - len(before) - len(after) - len(tail)
    inner = _by_arg(args[index], room, pos - at) if room >= 8 else None
    return None if inner is None else head + before + inner + after + tail


def short_names(names: Sequence[str], width: int) -> list[str]:
    """``short_name`` for each, then distinct names that came out equal are shown again by
    what tells them apart: the template argument where they differ, else a window of whole
    words around the first place where they differ."""
    shorts = [short_name(n, width) for n in names]
    family = list(range(len(names)))  # names that ever came out equal are told apart together
    for _ in range(3):
        groups: dict[str, list[int]] = {}
        for i, s in enumerate(shorts):
            groups.setdefault(s, []).append(i)
        clashes = [m for m in groups.values() if len({names[i] for i in m}) > 1]
        if not clashes:
            break
        for members in clashes:
            root = family[members[0]]
            for i in range(len(family)):
                if family[i] in {family[j] for j in members}:
                    family[i] = root
        together: dict[int, list[int]] = {}
        for members in clashes:
            together[family[members[0]]] = [i for i, f in enumerate(family)
                                             if f == family[members[0]]]
        _tell_apart(names, shorts, together.values(), width)
    return shorts


_PICKS: tuple[Callable[[list[int]], list[int]], ...] = (
    lambda at: [max(at)], lambda at: [min(at)], lambda at: [(min(at) + max(at)) // 2],
    lambda at: sorted({min(at), max(at)}))


def _tell_apart(names: Sequence[str], shorts: list[str], groups: Iterable[list[int]],
                width: int) -> None:
    for members in groups:
        fulls = {names[i] for i in members}
        if len(fulls) < 2:
            continue
        # the shortest spelling under which they still differ ('A::compile' and
        # 'B::compile' are both 'compile' once namespaces go)
        plains = next(
            p for p in ([simplify(names[i]) for i in members],
                        [strip_params(drop_return_type(names[i])) for i in members],
                        [names[i] for i in members])
            if len(set(p)) == len(fulls))
        parts = [[_first_difference(p, o) for o in plains if o != p] for p in plains]
        tries = []
        for pick in (max, min):
            by_arg = [_by_arg(p, width, pick(at)) for p, at in zip(plains, parts, strict=True)]
            if all(by_arg):
                tries.append([s or "" for s in by_arg])
        # names that differ in two places (conv5_block1, conv2_block1, conv5_block2) may
        # need the first place, or a window over both
        tries += [[_windows(p, width, pick(at)) for p, at in zip(plains, parts, strict=True)]
                  for pick in _PICKS]
        best = next((t for t in tries if len(set(t)) == len(set(plains))), tries[-1])
        for i, short in zip(members, best, strict=True):
            shorts[i] = short
