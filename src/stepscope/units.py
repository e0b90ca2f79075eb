"""How durations read everywhere stepscope prints them (reports, findings, capture tables)."""

from __future__ import annotations

import math
from collections.abc import Iterable


def format_us(us: float) -> str:
    """µs as one value with its unit: '89.0 µs', '1.92 ms', '-1.50 ms' (unit by magnitude)."""
    return f"{us / 1000.0:,.2f} ms" if abs(us) >= 1000 else f"{us:,.1f} µs"


def column_unit(values_us: Iterable[float]) -> tuple[str, float, str]:
    """One unit for a whole column, so it never mixes ms and µs: (label, divisor, format).

    ms once any value reaches a millisecond, µs otherwise.
    """
    if max(values_us, default=0.0) >= 1000.0:
        return "ms", 1000.0, "{:,.2f}"
    return "µs", 1.0, "{:,.1f}"


def column_unit_ns(values_ns: Iterable[float]) -> tuple[str, float, str]:
    """``column_unit`` for columns kept in ns (Nsight Systems): ns while every value is
    under a microsecond, then µs, then ms, as for µs columns."""
    largest = max(values_ns, default=0.0)
    if largest >= 1e6:
        return "ms", 1e6, "{:,.2f}"
    if largest >= 1e3:
        return "µs", 1e3, "{:,.1f}"
    return "ns", 1.0, "{:,.0f}"


def format_ns(ns: float) -> str:
    """ns as one value with its unit, as ``format_us`` and '212 ns' under a microsecond."""
    return format_us(ns / 1e3) if ns >= 1e3 else f"{ns:,.0f} ns"


_BYTE_UNITS = (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def format_bytes(n: float | None) -> str:
    """Bytes in binary units: '512 B', '1.50 KiB', '2.60 GiB'; '–' when unknown."""
    if n is None:
        return "–"
    for unit, size in _BYTE_UNITS:
        if abs(n) >= size:
            return f"{n / size:,.2f} {unit}"
    return f"{n:,.0f} B"


def bytes_unit(values: Iterable[float]) -> tuple[str, float, str]:
    """One binary unit for a whole column of byte counts: (label, divisor, format)."""
    largest = max((abs(v) for v in values), default=0.0)
    for unit, size in _BYTE_UNITS:
        if largest >= size:
            return unit, float(size), "{:,.2f}"
    return "B", 1.0, "{:,.0f}"


def round_finite(x: float | None, nd: int) -> float | None:
    """``x`` to ``nd`` decimals for JSON; None for None, NaN and infinities."""
    return None if x is None or not math.isfinite(x) else round(float(x), nd)


def count(n: float, one: str, many: str | None = None) -> str:
    """``n`` with its noun in the right number: "1 call", "3 calls", "1.5 fetches". A float
    (a count per step) shows one decimal unless it is whole or 100 or more: "2 calls", "758
    calls", never "2.0 calls"."""
    whole = isinstance(n, int) or float(n).is_integer() or abs(n) >= 100
    text = f"{round(n):,}" if whole else f"{n:,.1f}"
    return f"{text} {one if text in ('1', '1.0') else (many or one + 's')}"  # as it reads
