"""Analyses: pure functions from a Trace (and each other's results) to typed results."""
