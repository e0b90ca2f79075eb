"""Memory files that are not traces: allocator snapshots and memory timelines."""
