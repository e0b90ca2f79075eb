"""Nsight Systems and Nsight Compute: the ``nsys stats`` summaries and the ncu join."""
