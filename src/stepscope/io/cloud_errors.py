"""One-line messages for cloud storage failures; never the credentials or signed URLs."""

from __future__ import annotations

from stepscope.errors import redact_urls

__all__ = ["not_found", "redact_urls", "scheme_missing", "storage_error", "unreachable_cause"]

_DENIED = ("403", "401", "forbidden", "accessdenied", "access denied", "invalidaccesskeyid",
           "signaturedoesnotmatch", "authenticationfailed", "authorizationfailure",
           "invalid_grant", "unauthorized", "credential")
_UNREACHABLE = ("connect", "timeout", "timed out", "name resolution", "unreachable")

CREDENTIAL_HINTS = {
    "s3": "AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or AWS_PROFILE)",
    "gs": "GOOGLE_APPLICATION_CREDENTIALS",
    "gcs": "GOOGLE_APPLICATION_CREDENTIALS",
    "az": "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_NAME / _KEY",
    "abfs": "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_NAME / _KEY",
}


def scheme_missing(path: str, exc: ImportError) -> str:
    """``path: support for this URL scheme is not installed ...`` with the extras to add."""
    return (f"{path}: support for this URL scheme is not installed ({exc}); "
            "try `pip install 'stepscope[s3]'`, `'stepscope[gcs]'` or `'stepscope[azure]'`")


def storage_error(path: str, exc: BaseException, action: str = "read") -> str:
    """``path: access denied ...`` / ``cannot reach ...`` / ``cannot read (TypeName)``."""
    text = f"{type(exc).__name__} {exc}".lower()
    scheme = path.split("://", 1)[0].lower() if "://" in path else ""
    if isinstance(exc, ValueError) and "protocol not known" in text:  # fsspec's word for it
        return (f"{path}: unknown URL scheme {scheme + '://'!r} (a local path, or s3://, "
                "gs://, az://, http(s)://, ...)")
    if isinstance(exc, PermissionError) or any(tok in text for tok in _DENIED):
        hint = CREDENTIAL_HINTS.get(scheme, "the storage credentials")
        return f"{path}: access denied; check the credentials ({hint})"
    if isinstance(exc, (ConnectionError, TimeoutError)) or any(t in text for t in _UNREACHABLE):
        return f"{path}: cannot reach the storage service ({type(exc).__name__})"
    return f"{path}: cannot {action} ({type(exc).__name__})"


def unreachable_cause(exc: BaseException) -> BaseException | None:
    """The connection error behind ``exc``, if any.

    fsspec's HTTP filesystem turns every failure of its HEAD/GET into FileNotFoundError,
    a refused connection or an unknown host included (aiohttp's ClientConnectorError, an
    OSError, is its ``__cause__``): those are not a missing object.
    """
    seen: set[int] = set()
    cur: BaseException | None = exc.__cause__ or exc.__context__
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, (ConnectionError, TimeoutError)) or (
            isinstance(cur, OSError) and not isinstance(cur, FileNotFoundError)
        ) or any(t in f"{type(cur).__name__} {cur}".lower() for t in _UNREACHABLE):
            return cur
        cur = cur.__cause__ or cur.__context__
    return None


def not_found(path: str, exc: FileNotFoundError, what: str = "object") -> str:
    """``path: no such object``, or ``cannot reach ...`` when a connection failed behind it."""
    cause = unreachable_cause(exc)
    if cause is not None:
        return f"{path}: cannot reach the storage service ({type(cause).__name__})"
    return f"{path}: no such {what}"
