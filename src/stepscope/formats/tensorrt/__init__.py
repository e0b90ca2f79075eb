"""TensorRT trtexec outputs: JSON exports, logs, and nsys exports of engine runs."""
