"""human_percentile's table and checks: a model's served scores of human next turns, one a conversation, in
Chit-Chat's train split (MIT; the largest permissive source: 6,450 conversations), the uniformity of the
percentiles it gives to human next turns of held-out conversations (Kolmogorov-Smirnov distance from uniform;
one turn a conversation, so the draws are independent), and operating points on the synthetic check's cases
(the true next turn accepted, a candidate set made only of negatives rejected)."""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from service.scorers.base import Item
from service.scorers.heads import MAX_TURNS
from training.evaluation.synthetic_cases import KINDS, Case

TABLE_SOURCE = "chitchat train"
TABLE_TURNS = 4000  # human next turns in the table (at most; one a conversation)
CHECK_TURNS = 2000  # human next turns a KS check reads per source (at most; one a conversation)
THRESHOLDS = (0.05, 0.1, 0.25, 0.5)
SEED = 51
Score = Callable[[list[Item]], Sequence[float]]


def next_turns(dialogues: list[list[str]], limit: int, seed: int = SEED) -> list[Item]:
    """One (context, human next turn) item from each of up to `limit` conversations, at a random position,
    the context the last MAX_TURNS turns before it; seeded, so the same items wherever the data is the same."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(dialogues)), min(limit, len(dialogues))))
    items = []
    for d in chosen:
        turns = dialogues[d]
        positions = [i for i in range(1, len(turns)) if turns[i].strip()]
        if positions:
            i = rng.choice(positions)
            items.append(Item(turns[max(0, i - MAX_TURNS):i], turns[i]))
    return items


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
