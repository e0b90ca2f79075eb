"""Local web dashboard: Starlette app factory, logdir discovery and background loading."""
