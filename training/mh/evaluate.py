"""Correlations of M_H and its proxies with human ratings, at conversation and at bot level (the paper's
comparison: each bot's mean out-of-fold M_H against its mean rating), beside the reply-length baseline."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from service.stats.correlation import spearman

from service.text import word_count


def correlate(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Pearson r with its p and 95% interval, Spearman rho with its p; null where undefined."""
    a, b = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    keep = ~(np.isnan(a) | np.isnan(b))
    a, b = a[keep], b[keep]
    out: dict[str, Any] = {"n": int(len(a)), "pearson": None, "p": None, "ci": None, "spearman": None,
                           "spearman_p": None}
    if len(a) < 3 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return out
    pearson = stats.pearsonr(a, b)
    interval = pearson.confidence_interval(0.95)
    rho, rho_p = spearman(a, b)  # the service's: exact p up to 9 items (4 iEval bots, rho 1: 1/12, not 0)
    out.update(pearson=float(pearson.statistic), p=float(pearson.pvalue),
               ci=[float(interval.low), float(interval.high)],
               spearman=rho, spearman_p=rho_p)
    return out


def mean_reply_words(texts_per_conversation: Sequence[Sequence[str]]) -> np.ndarray:
    """Mean words per bot turn of each conversation (the length baseline)."""
    return np.array([float(np.mean([word_count(t) for t in texts])) if texts else np.nan
                     for texts in texts_per_conversation])


def group_means(values: np.ndarray, groups: Sequence[str], order: Sequence[str]) -> np.ndarray:
    g = np.asarray(groups)
    return np.array([float(np.nanmean(values[g == name])) for name in order])
