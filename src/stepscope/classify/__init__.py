"""Documented pattern tables: kernel classes and GPU peaks, each with its sources."""
