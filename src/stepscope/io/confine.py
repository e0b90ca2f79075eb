"""Paths confined to allowed folders (the MCP server's ``--root``): resolve, then refuse.

A path is resolved with every symlink followed (``os.path.realpath``) and must then lie
inside one of the roots (themselves resolved). A relative path is taken relative to the
first root, not to the server's working folder, which the client does not know. A folder
is allowed only when every entry directly inside it resolves inside a root too: the
readers read a folder's files (the ranks of a run, an engine's trtexec outputs), so a
symlink inside the folder must not lead out of it. URLs (``s3://``, ...) are refused:
they are outside every local root.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from stepscope.errors import UsageError
from stepscope.io.source import is_url, local_path


def resolve_roots(roots: Sequence[str]) -> tuple[str, ...]:
    """The roots as resolved absolute folders; a missing one is a UsageError."""
    out = []
    for root in roots or (".",):
        real = os.path.realpath(local_path(root))
        if not os.path.isdir(real):
            raise UsageError(f"--root {root!r}: not a folder")
        out.append(real)
    return tuple(out)


def _inside(real: str, roots: Sequence[str]) -> bool:
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def confine(path: str, roots: Sequence[str]) -> str:
    """``path`` resolved, when it lies inside ``roots``; a UsageError naming the roots if not."""
    if not roots:
        raise UsageError("no root folder allowed")
    where = " or ".join(roots)
    if is_url(path):
        raise UsageError(f"{path}: a URL, outside the allowed folder(s) {where}")
    raw = local_path(path)
    real = os.path.realpath(raw if os.path.isabs(raw) else os.path.join(roots[0], raw))
    if not _inside(real, roots):
        raise UsageError(f"{path}: outside the allowed folder(s) {where}")
    if os.path.isdir(real):
        try:
            names = os.listdir(real)
        except OSError as exc:
            raise UsageError(f"{path}: cannot list ({exc.strerror or exc})") from None
        for name in names:
            if not _inside(os.path.realpath(os.path.join(real, name)), roots):
                raise UsageError(f"{path}: {name} links outside the allowed folder(s) {where}")
    return real
