"""The pipelines a command runs for an input kind (formats/kinds.py names them): a run of
ranks or captures, a TensorRT engine, two engines compared, an Nsight Compute export alone.
"""
