"""Confidence intervals of the per-system means `dialscore score` prints.

Each (system, model) mean gets a percentile bootstrap interval from scipy.stats.bootstrap: that system's
lines the model scored, resampled with replacement (the system fixed; the lines a sample of the lines it
could have been given). Every mean draws from its own generator seeded by `seed` alone, so a system's
interval does not move with the other systems or models in the file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats as sps

METHOD = "percentile bootstrap (scipy.stats.bootstrap)"
RESAMPLED = "the row's lines the model scored (a system's; `all`: every line), resampled with replacement"
DEFAULT_CONFIDENCE = 0.95
DEFAULT_RESAMPLES = 1000
MIN_LINES = 2  # one scored line has no spread to resample
_CHUNK_CELLS = 2_000_000  # resamples x lines held at once (16 MB), so a large file's intervals stay small


@dataclass(frozen=True)
class IntervalSettings:
    """Level, B and seed of the intervals; resamples 0 turns them off."""

    confidence: float = DEFAULT_CONFIDENCE
    resamples: int = DEFAULT_RESAMPLES
    seed: int = 0

    def describe(self) -> dict[str, Any]:
        """What the intervals are, for the JSON summary."""
        return {"method": METHOD, "confidence": self.confidence, "resamples": self.resamples, "seed": self.seed,
                "resampled": RESAMPLED}


def mean_interval(values: list[float], settings: IntervalSettings) -> list[float] | None:
    """[low, high] of the mean of `values`, or None with fewer than MIN_LINES values or resampling off."""
    if settings.resamples == 0 or len(values) < MIN_LINES:
        return None
    found = sps.bootstrap((np.asarray(values, dtype=np.float64),), np.mean, n_resamples=settings.resamples,
                          batch=max(1, _CHUNK_CELLS // len(values)), confidence_level=settings.confidence,
                          method="percentile", vectorized=True, rng=np.random.default_rng(settings.seed))
    return [float(found.confidence_interval.low), float(found.confidence_interval.high)]
