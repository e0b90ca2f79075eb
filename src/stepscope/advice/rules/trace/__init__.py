"""Rules over one trace's host and GPU timeline."""
