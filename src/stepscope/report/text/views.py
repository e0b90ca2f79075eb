"""The text report's views (``--view``): which sections each prints."""

VIEWS = ("summary", "operators", "kernels", "all")
