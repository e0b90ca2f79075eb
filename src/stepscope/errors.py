"""User-facing errors. Every failure a user can cause carries a one-line message."""

from __future__ import annotations


class StepscopeError(Exception):
    """Base class: ``str(err)`` is a complete one-line message for the user."""

    exit_code = 2


class TraceSourceError(StepscopeError):
    """The file or URL cannot be opened or read (missing, permission, network, bad gzip)."""


class TraceFormatError(StepscopeError):
    """The content is not a trace we can read (empty, not JSON, JSON but not a trace)."""


class UsageError(StepscopeError):
    """The command line or API call is wrong (unknown step, bad option)."""


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so an error message always fits on one line; a long one loses
    its middle, not its end (the file comes first and what to do about it last)."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    head = (limit - 1) // 2
    return flat[:head] + "…" + flat[len(flat) - (limit - 1 - head):]
