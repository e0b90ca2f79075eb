"""System monitoring: the steady window, shares and summaries of a monitored run, the verdict."""
