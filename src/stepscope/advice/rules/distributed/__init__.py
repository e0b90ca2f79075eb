"""Rules about communication and runs of many ranks."""
