"""Rounding of figures for the JSON report sections, one way everywhere."""

from __future__ import annotations

from stepscope.units import round_finite


def us(ns: float | int) -> float:
    """Nanoseconds as microseconds, to 3 decimals (one ns)."""
    return round(float(ns) / 1000.0, 3)


def r(x: float | None, nd: int = 2) -> float | None:
    """``x`` to ``nd`` decimals; None stays None (as do NaN and infinities, which JSON lacks)."""
    return round_finite(x, nd)
