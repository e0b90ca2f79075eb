"""A ``stepscope monitor`` output: ``monitor.json`` (``stepscope.monitor/1``) and the samples in
``monitor.parquet`` beside it (docs/monitor.md); found next to a trace, it joins the trace's
report as its system view."""
