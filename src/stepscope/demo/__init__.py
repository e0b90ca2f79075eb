"""The built-in demo: a small training job profiled before and after the advised fixes.

``run_demo`` is also the advisor's end-to-end check: the fixed run must gain at least
half of what the advisor estimated from the slow run's trace.
"""

from __future__ import annotations

from stepscope.demo.run import DemoResult, run_demo

__all__ = ["DemoResult", "run_demo"]
