"""Rules that judge work against the hardware: matrix cores, MFU, alignment, occupancy."""
