"""Where the built front end lives: package data, or frontend/dist in a source checkout."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent / "static"


def find_bundle() -> Path | None:
    """The folder with index.html and assets/, or None when the bundle is not built."""
    candidates = [os.environ.get("STEPSCOPE_FRONTEND_DIST"), str(PACKAGE_DIR)]
    for c in candidates:
        if c and (Path(c) / "index.html").is_file():
            return Path(c)
    return None
