"""Input formats: each reader turns one kind of file into a ``model.Trace``."""

from stepscope.formats.load import load_trace

__all__ = ["load_trace"]
