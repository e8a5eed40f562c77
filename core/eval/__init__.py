"""Measuring: ``arena eval`` and its statistics, pass@k, testbed ceilings, run comparisons, reports and plots."""
