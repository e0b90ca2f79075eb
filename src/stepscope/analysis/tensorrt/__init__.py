"""TensorRT engines: the per-layer analysis, name decoding, kernels to layers, engine comparison."""
