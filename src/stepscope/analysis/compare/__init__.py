"""Comparing two runs: the diff, its noise tests and the regression gate."""
