"""Confidence intervals of the per-system means `dialscore score` prints.

Each (system, model) mean gets a Student-t interval, mean +- t(n - 1) x standard error over that system's
lines the model scored (scipy; the system fixed, its lines a sample of those it could have been given),
as /human-eval's means do. Not a percentile bootstrap: from few lines that is far too narrow (from two,
[min, max], which holds the mean half the time), where the t-interval keeps its level at any n >= 2 for
normal scores and widens as n shrinks. It resamples nothing, so it needs no B and no seed: `--resamples 0`
still turns the intervals off, and another B or a seed changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from service.stats.human_eval import mean_interval as t_interval

METHOD = "Student-t interval of the mean (scipy.stats.t, n - 1 degrees of freedom)"
RESAMPLED = ("nothing: mean +- t x standard error of the row's lines the model scored (a system's; `all`: every "
             "line), the lines taken as a sample")
DEFAULT_CONFIDENCE = 0.95
MIN_LINES = 2  # one scored line has no spread to estimate


@dataclass(frozen=True)
class IntervalSettings:
    """Level of the intervals, and whether there are any (`--resamples 0`: none)."""

    confidence: float = DEFAULT_CONFIDENCE
    enabled: bool = True

    def describe(self) -> dict[str, Any]:
        """What the intervals are, for the JSON summary: `resamples` and `seed` stay for older readers, null
        as nothing is resampled (`resamples` 0 where the intervals are off, as `--resamples 0` asks)."""
        return {"method": METHOD if self.enabled else None, "confidence": self.confidence,
                "resamples": None if self.enabled else 0, "seed": None,
                "resampled": RESAMPLED if self.enabled else None}


def mean_interval(values: list[float], settings: IntervalSettings) -> list[float] | None:
    """[low, high] of the mean of `values`, or None with fewer than MIN_LINES values, intervals off, or an
    unbounded interval.

    /human-eval's interval (scipy.stats.t.interval over the standard error), rather than
    ttest_1samp(...).confidence_interval, which gives the same numbers but warns of precision loss on
    nearly equal scores. Scores that never vary give [mean, mean]: no interval can see spread the lines
    do not show."""
    if not settings.enabled or len(values) < MIN_LINES:
        return None
    x = np.asarray(values, dtype=np.float64)
    if np.ptp(x) == 0:
        return [float(x.mean())] * 2
    return t_interval(x, settings.confidence)
