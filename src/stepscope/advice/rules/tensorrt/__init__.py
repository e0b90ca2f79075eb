"""Rules over a TensorRT engine's analysis."""
