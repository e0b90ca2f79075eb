"""`python -m stepscope ...`: the same entry point as the `stepscope` console script."""

from stepscope.cli.main import entry_point

entry_point()
