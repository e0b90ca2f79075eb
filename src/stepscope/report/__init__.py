"""Presentation: build the report from analyses, render it as text (rich) or JSON."""

DEFAULT_TOP = 15  # rows per operator/kernel table, for every command and API
