"""benchmarks/common/seed_stats.py: the mean, sample sd and worst seed every benchmark reports."""

import statistics

import pytest

from benchmarks.common.seed_stats import format_seed_stats, seed_stats


def test_mean_sample_sd_and_worst_seed():
    scores = [0.430, 0.397, 0.440]
    mean, sd, worst = seed_stats(scores)
    assert mean == pytest.approx(0.42233333)
    assert sd == pytest.approx(statistics.stdev(scores)) and sd == pytest.approx(0.02250185)
    assert worst == 0.397
    assert format_seed_stats(scores) == "0.422 +- 0.023 (worst 0.397)"
    assert format_seed_stats(scores, 4) == "0.4223 +- 0.0225 (worst 0.3970)"


def test_one_seed_has_no_spread():
    assert seed_stats([0.5]) == (0.5, 0.0, 0.5)
