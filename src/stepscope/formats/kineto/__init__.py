"""PyTorch profiler / Kineto Chrome-trace JSON of every era and vendor."""
