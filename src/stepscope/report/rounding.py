"""Rounding of figures for the JSON report sections, one way everywhere."""

from __future__ import annotations


def us(ns: float | int) -> float:
    """Nanoseconds as microseconds, to 3 decimals (one ns)."""
    return round(float(ns) / 1000.0, 3)


def r(x: float | None, nd: int = 2) -> float | None:
    """``x`` to ``nd`` decimals; None stays None."""
    return None if x is None else round(float(x), nd)
