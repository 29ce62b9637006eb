"""service/cli/intervals.py: the interval of a mean `dialscore score` prints."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from service.cli.intervals import IntervalSettings, mean_interval


def test_an_interval_is_scipys_student_t_interval_of_the_mean() -> None:
    values = np.random.default_rng(4).normal(size=30)
    found = sps.ttest_1samp(values, 0).confidence_interval(0.8)
    assert mean_interval(values.tolist(), IntervalSettings(0.8)) == pytest.approx([found.low, found.high])
    assert mean_interval([1.0], IntervalSettings()) is None
    assert mean_interval([1.0, 2.0], IntervalSettings(enabled=False)) is None
    low, high = mean_interval([1.0, 2.0], IntervalSettings())  # two lines are enough (docs/commands.md)
    assert (low, high) == pytest.approx((1.5 - 12.7062 / 2, 1.5 + 12.7062 / 2))  # t(1) .975 = 12.7062


def test_scores_that_never_or_hardly_vary_give_a_narrow_interval_without_a_warning() -> None:
    assert mean_interval([0.25, 0.25, 0.25], IntervalSettings()) == [0.25, 0.25]
    low, high = mean_interval([0.1, 0.1, 0.1 + 1e-16], IntervalSettings())  # warnings are errors here
    assert low <= 0.1 <= high and high - low < 1e-15


# Coverage of the true mean over seeded normal samples: 400 runs put the nominal .95 within
# 3 binomial standard errors (sqrt(.95 x .05 / 400) = .011) of the share covered.
@pytest.mark.parametrize("lines", [2, 3, 10])
def test_the_interval_of_a_few_lines_covers_the_mean_at_its_nominal_rate(lines: int) -> None:
    runs, level = 400, 0.95
    samples = np.random.default_rng(lines).normal(loc=3.0, size=(runs, lines))
    covered = 0
    for sample in samples:
        low, high = mean_interval(sample.tolist(), IntervalSettings(level))
        covered += low <= 3.0 <= high
    assert abs(covered / runs - level) <= 3 * math.sqrt(level * (1 - level) / runs), covered / runs
