"""Storage layer: open local paths and fsspec URLs, sniff gzip, cache parsed traces."""

from stepscope.io.source import RawSource, read_source

__all__ = ["RawSource", "read_source"]
