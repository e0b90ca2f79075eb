"""Dependency graph of a trace window, its critical path, and what-if replays
(docs/metrics.md "Critical path", docs/whatif.md)."""
