"""Efficiency against the hardware: work models (FLOPs, bytes), roofline and MFU."""
