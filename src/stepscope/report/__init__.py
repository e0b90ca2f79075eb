"""Presentation: build the report from analyses, render it as text (rich) or JSON."""
