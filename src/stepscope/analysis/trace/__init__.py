"""The views of one trace: breakdown, GPU, operators, kernels, launches, idle, temporal, modules."""
