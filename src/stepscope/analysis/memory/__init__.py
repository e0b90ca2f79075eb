"""Memory: the trace's allocator records, allocator snapshots and memory timelines."""
