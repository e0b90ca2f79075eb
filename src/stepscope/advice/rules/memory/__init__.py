"""Rules about GPU memory: the trace's records and allocator snapshots."""
