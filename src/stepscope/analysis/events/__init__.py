"""What a trace's events are and how they relate: intervals, links, the call tree, CUDA graphs,
NVTX nesting, steps, warm-up, clock skew.
"""
