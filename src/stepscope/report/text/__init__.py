"""The terminal report (rich): one module per section, and the layout blocks."""
