"""Communication and runs of many ranks: one trace's collectives, one rank's summary, the run's
reduction.
"""
