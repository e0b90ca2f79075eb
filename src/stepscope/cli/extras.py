"""Which optional extra provides a missing module, so a bare install says what to install.

The core install (``pip install stepscope``) reads and reports traces; the dashboard, capture,
Dask, cloud storage, the C++ demangler and the system monitor are extras (pyproject.toml). A
command that reaches one of their modules without it installed ends in one line naming the
extra, exit 2.
"""

from __future__ import annotations

EXTRA_OF_MODULE = {
    "starlette": "web", "uvicorn": "web", "httpx": "web",
    "torch": "torch", "nvtx": "torch",
    "lightning": "lightning", "pytorch_lightning": "lightning",
    "dask": "dask", "distributed": "dask",
    "s3fs": "s3", "gcsfs": "gcs", "adlfs": "azure",
    "itanium_demangler": "nsys",
    "duckdb": "sql", "mcp": "mcp", "mcp_types": "mcp",
    "psutil": "monitor", "pynvml": "monitor",
}


def missing_extra(exc: ModuleNotFoundError) -> str | None:
    """The extra whose module ``exc`` could not find (None: not one of ours)."""
    top = (exc.name or "").split(".", 1)[0]
    return EXTRA_OF_MODULE.get(top)


def install_hint(extra: str) -> str:
    return f"pip install 'stepscope[{extra}]'"  # quoted: zsh expands [] otherwise
