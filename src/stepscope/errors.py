"""User-facing errors. Every failure a user can cause carries a one-line message."""

from __future__ import annotations

import re

# Credentials typed into a URL: the userinfo of ``scheme://user:secret@host/...`` (also when
# the secret holds an unescaped '/'), and the query parameters that carry a signature or a
# token in signed URLs (AWS X-Amz-*, GCS X-Goog-*, Azure SAS ``sig``) or by convention.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)(?:[^/?#\s@]*|[^\s@]*:[^\s@]*)@")
_SECRET_PARAM = re.compile(
    r"(?i)([?&;](?:x-amz-(?:signature|credential|security-token)|x-goog-(?:signature|credential)"
    r"|sig|signature|token|access_token|id_token|api_?key|key|secret|password|passwd|pwd"
    r"|client_secret|code)=)[^&#\s]*")
REDACTED = "***"


def redact_urls(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***``.

    Every user-facing error goes through this (``StepscopeError`` and ``one_line``), and so
    does the path of a trace read from a URL (the report shows it): a secret typed into a
    URL is never echoed (docs/security.md, "URLs and credentials").
    """
    if "://" not in text:
        return text
    return _SECRET_PARAM.sub(rf"\1{REDACTED}", _USERINFO.sub(rf"\1{REDACTED}@", text))


class StepscopeError(Exception):
    """Base class: ``str(err)`` is a complete one-line message for the user (credentials in
    URLs redacted)."""

    exit_code = 2

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact_urls(a) if isinstance(a, str) else a for a in args))


class TraceSourceError(StepscopeError):
    """The file or URL cannot be opened or read (missing, permission, network, bad gzip)."""


class TraceFormatError(StepscopeError):
    """The content is not a trace we can read (empty, not JSON, JSON but not a trace)."""


class UsageError(StepscopeError):
    """The command line or API call is wrong (unknown step, bad option)."""


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so an error message always fits on one line; a long one loses
    its middle, not its end (the file comes first and what to do about it last). Credentials
    in URLs are redacted."""
    flat = " ".join(redact_urls(str(text)).split())
    if len(flat) <= limit:
        return flat
    head = (limit - 1) // 2
    left, right = flat[:head], flat[len(flat) - (limit - 1 - head):]
    # cut at spaces where there are some, so no word is left in pieces around the "…"
    cut_left, cut_right = left.rfind(" "), right.find(" ")
    if cut_left > head // 2:
        left = left[:cut_left + 1]
    if 0 <= cut_right < len(right) // 2:
        right = right[cut_right:]
    return left + "…" + right
