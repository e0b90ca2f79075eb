"""Nsight Systems SQLite exports and reports, Nsight Compute CSV exports."""
