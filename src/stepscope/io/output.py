"""Output files (``--html``, ``--save-baseline``): checked before the work, written whole.

:func:`unwritable` says why a path cannot be written *before* a long analysis runs, so a
bad ``--html`` path costs nothing; :func:`write_atomic` writes through a temporary file in
the same folder and renames it, so an error (a full disk, an interrupt) never leaves a
half-written file nor destroys the previous one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile


def unwritable(path: str) -> str | None:
    """Why ``path`` cannot be written as a file (its missing folders made), or None."""
    if not path:
        return "empty path"
    if os.path.isdir(path):
        return "is a directory"
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):  # the folders write_atomic would make
        up = os.path.dirname(parent)
        if up == parent:
            break
        parent = up
    if not os.path.isdir(parent):
        return f"{parent} is not a directory"
    try:  # the one true test: a file can be made there (permissions, read-only mounts)
        fd, probe = tempfile.mkstemp(dir=parent, prefix=".stepscope-probe-")
    except OSError as exc:
        return exc.strerror or str(exc)
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def write_atomic(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` (missing folders made) all at once; OSError on failure."""
    if os.path.isdir(path):
        raise IsADirectoryError(21, "Is a directory", path)
    parent = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(parent, exist_ok=True)
    except FileExistsError:  # a file where a folder should be
        raise NotADirectoryError(20, "Not a directory", parent) from None
    fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{os.path.basename(path)}.",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
