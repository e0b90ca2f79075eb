"""``stepscope monitor``: sample a run from outside, time its phases from inside."""
