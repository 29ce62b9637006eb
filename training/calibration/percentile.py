"""human_percentile's table and checks: a model's served scores of human next turns in Chit-Chat's validation
conversations (MIT; no training stream reads that split), the uniformity of the percentiles it gives to human
next turns elsewhere (Kolmogorov-Smirnov distance from uniform), and operating points on the synthetic check's
cases (the true next turn accepted, a candidate set made only of negatives rejected)."""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from service.scorers.base import Item
from service.scorers.heads import MAX_TURNS
from training.evaluation.synthetic_cases import KINDS, Case

TABLE_SOURCE = "chitchat validation"
TABLE_TURNS = 4000  # human next turns in the table (at most)
CHECK_TURNS = 2000  # human next turns a KS check reads per source (at most)
THRESHOLDS = (0.05, 0.1, 0.25, 0.5)
SEED = 51
Score = Callable[[list[Item]], Sequence[float]]


def next_turns(dialogues: list[list[str]], limit: int, seed: int = SEED) -> list[Item]:
    """Up to `limit` (context, human next turn) items, each from another position, the contexts the last
    MAX_TURNS turns before the reply; seeded, so the same items wherever the data is the same."""
    positions = [(d, i) for d, turns in enumerate(dialogues) for i in range(1, len(turns)) if turns[i].strip()]
    chosen = random.Random(seed).sample(positions, min(limit, len(positions)))
    return [Item(dialogues[d][max(0, i - MAX_TURNS):i], dialogues[d][i]) for d, i in sorted(chosen)]


def ks_from_uniform(percentiles: Sequence[float]) -> float:
    """The Kolmogorov-Smirnov distance of the percentiles from the uniform distribution on [0, 1]."""
    return float(stats.kstest(np.asarray(percentiles, dtype=np.float64), "uniform").statistic)


@dataclass(frozen=True)
class OperatingPoint:
    threshold: float
    true_accepted: float  # share of true next turns at or above the threshold
    negatives_rejected: float  # share of contexts whose every negative is below it
    contexts: int


def operating_points(cases: list[Case], percentile: Callable[[Sequence[float]], list[float]], score: Score,
                     thresholds: Sequence[float] = THRESHOLDS) -> list[OperatingPoint]:
    """A candidate set a context: its true next turn, or its negatives of every kind without it (cases that
    lack a kind for a context are left out of that context's set)."""
    by_context: dict[tuple[str, ...], dict[str, str]] = {}
    true: dict[tuple[str, ...], str] = {}
    for case in cases:
        by_context.setdefault(case.context, {})[case.kind] = case.negative
        true[case.context] = case.true
    contexts = list(by_context)
    items = [Item(list(c), true[c]) for c in contexts]
    negatives = [Item(list(c), by_context[c][k]) for c in contexts for k in KINDS if k in by_context[c]]
    p_true = np.asarray(percentile(score(items)))
    p_negative = np.asarray(percentile(score(negatives)))
    best_negative, start = np.zeros(len(contexts)), 0
    for j, c in enumerate(contexts):
        count = sum(k in by_context[c] for k in KINDS)
        best_negative[j] = p_negative[start:start + count].max()
        start += count
    return [OperatingPoint(t, float((p_true >= t).mean()), float((best_negative < t).mean()), len(contexts))
            for t in thresholds]
