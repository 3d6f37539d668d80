"""Quality over seeds, as every benchmark reports it: mean, sample standard
deviation (0 for one seed) and the worst seed."""

import statistics


def seed_stats(values):
    """`(mean, sd, worst)` of per-seed scores (higher is better)."""
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return statistics.fmean(values), sd, min(values)


def format_seed_stats(values, digits=3):
    """`"mean +- sd (worst w)"` with `digits` decimals."""
    mean, sd, worst = seed_stats(values)
    return f"{mean:.{digits}f} +- {sd:.{digits}f} (worst {worst:.{digits}f})"
