"""On every real Kineto trace, the native scanner reads the same Trace as the Python path.

Each file is read twice (scanner on, scanner off); every table's every column must be
equal, the string table too. The scanner must also take every chunk of these traces:
they are what producers write, and a decline there would silently lose the speed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.conftest import SHARED_TRACES

from stepscope.formats.kineto import reader, scan
from stepscope.io.source import read_source

pytestmark = pytest.mark.skipif(not scan.available(),
                                reason="the native scanner is not built (no C compiler)")


def kineto_traces() -> list[Path]:
    if not SHARED_TRACES.is_dir():
        return []
    found = [p for p in sorted(SHARED_TRACES.rglob("*.json*"))
             if p.suffix in (".json", ".gz") and "tensorrt" not in p.parts
             and "nsys" not in p.parts]
    return [p for p in found if _head(p).lstrip()[:1] in (b"{", b"[")]


def _head(path: Path) -> bytes:
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as fh:
        return bytes(fh.read(1 << 16))


TRACES = kineto_traces()


@pytest.mark.skipif(not TRACES, reason="needs ../shared/traces beside the repo")
@pytest.mark.parametrize("path", TRACES, ids=lambda p: str(p.relative_to(SHARED_TRACES)))
def test_same_trace_with_and_without_the_scanner(path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    calls = {"declined": 0, "scanned": 0}
    real_scan = scan.scan

    def counting(piece: bytes | memoryview) -> scan.Scanned | None:
        got = real_scan(piece)
        calls["declined" if got is None else "scanned"] += 1
        return got

    monkeypatch.setattr("stepscope.formats.kineto.scanned.scan", counting)
    native = reader.read_kineto(read_source(str(path)), workers=1)
    assert calls["declined"] == 0 and calls["scanned"] > 0
    monkeypatch.setattr(scan, "_LIB", None)
    python = reader.read_kineto(read_source(str(path)), workers=1)

    assert native.strings == python.strings
    assert native.meta == python.meta
    for name in native.TABLES:
        a, b = getattr(native, name).columns(), getattr(python, name).columns()
        for col, values in b.items():
            assert np.array_equal(a[col], values, equal_nan=values.dtype.kind == "f"), \
                (name, col)
