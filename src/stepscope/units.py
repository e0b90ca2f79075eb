"""How durations read everywhere stepscope prints them (reports, findings, capture tables)."""

from __future__ import annotations

from collections.abc import Iterable


def format_us(us: float) -> str:
    """µs as one value with its unit: '89.0 µs', '1.92 ms'."""
    return f"{us / 1000.0:,.2f} ms" if us >= 1000 else f"{us:,.1f} µs"


def column_unit(values_us: Iterable[float]) -> tuple[str, float, str]:
    """One unit for a whole column, so it never mixes ms and µs: (label, divisor, format).

    ms once any value reaches a millisecond, µs otherwise.
    """
    if max(values_us, default=0.0) >= 1000.0:
        return "ms", 1000.0, "{:,.2f}"
    return "µs", 1.0, "{:,.1f}"
