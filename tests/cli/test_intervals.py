"""service/cli/intervals.py: the interval of a mean `dialscore score` prints."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from scipy import stats as sps

from service.cli.intervals import IntervalSettings, mean_interval


def test_an_interval_is_scipys_percentile_bootstrap_of_the_mean() -> None:
    values = np.random.default_rng(4).normal(size=30)
    found = sps.bootstrap((values,), np.mean, n_resamples=300, confidence_level=0.8, method="percentile",
                          rng=np.random.default_rng(9)).confidence_interval
    assert mean_interval(values.tolist(), IntervalSettings(0.8, 300, 9)) == pytest.approx([found.low, found.high])
    assert mean_interval([1.0], IntervalSettings()) is None and mean_interval([1.0, 2.0], IntervalSettings(0.95, 0)) is None
    low, high = mean_interval([1.0, 2.0], IntervalSettings())  # two lines are enough (docs/commands.md)
    assert 1.0 <= low <= 1.5 <= high <= 2.0


def test_a_large_files_interval_is_drawn_in_chunks() -> None:
    """200,000 lines x 1,000 resamples at once would hold 1.6 GB."""
    values = np.random.default_rng(0).normal(size=200_000).tolist()
    tracemalloc.start()
    try:
        interval = mean_interval(values, IntervalSettings())
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert interval[0] < np.mean(values) < interval[1] and peak < 200e6
