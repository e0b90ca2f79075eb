"""The JSON report: one module per section, and the renderer."""
