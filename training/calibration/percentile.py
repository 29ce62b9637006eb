"""human_percentile's table and checks: a model's served scores of human next turns, a few a conversation, in
Chit-Chat's train split (MIT; the largest permissive source), the uniformity of the percentiles it gives to
human next turns of held-out conversations (Kolmogorov-Smirnov distance from uniform, with an interval that
resamples whole conversations, since turns of one conversation are not independent draws), and operating
points on the synthetic check's cases (the true next turn accepted, a candidate set made only of negatives
rejected)."""
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
TABLE_CONVERSATIONS = 4000  # conversations the table reads (at most)
CHECK_CONVERSATIONS = 2000  # conversations a KS check reads per source (at most)
# Next turns read a conversation (at most): one a conversation left the Chit-Chat check at 401 draws, where
# a perfect table's KS distance from uniform is itself .04 on average and above .05 one time in four; four
# give more than three times the draws.
PER_CONVERSATION = 4
THRESHOLDS = (0.05, 0.1, 0.25, 0.5)
SEED = 51
INTERVAL_RESAMPLES = 400
Score = Callable[[list[Item]], Sequence[float]]


@dataclass(frozen=True)
class NextTurns:
    items: list[Item]
    conversation: np.ndarray  # each item's conversation, for resampling whole conversations


def next_turns(dialogues: list[list[str]], limit: int, per_conversation: int = PER_CONVERSATION,
               seed: int = SEED) -> NextTurns:
    """Up to `per_conversation` (context, human next turn) items from each of up to `limit` conversations, at
    distinct random positions, each context the last MAX_TURNS turns before its turn; seeded, so the same
    items wherever the data is the same."""
    rng = random.Random(seed)
    chosen = sorted(rng.sample(range(len(dialogues)), min(limit, len(dialogues))))
    items, conversation = [], []
    for d in chosen:
        turns = dialogues[d]
        positions = [i for i in range(1, len(turns)) if turns[i].strip()]
        for i in sorted(rng.sample(positions, min(per_conversation, len(positions)))):
            items.append(Item(turns[max(0, i - MAX_TURNS):i], turns[i]))
            conversation.append(d)
    return NextTurns(items, np.asarray(conversation, dtype=np.int64))


def ks_from_uniform(percentiles: Sequence[float]) -> float:
    """The Kolmogorov-Smirnov distance of the percentiles from the uniform distribution on [0, 1]."""
    return float(stats.kstest(np.asarray(percentiles, dtype=np.float64), "uniform").statistic)


def ks_interval(percentiles: Sequence[float], conversation: np.ndarray, level: float = 0.95,
                resamples: int = INTERVAL_RESAMPLES, seed: int = SEED) -> tuple[float, float]:
    """A percentile-bootstrap interval of ks_from_uniform that resamples whole conversations. A resample
    repeats conversations, which moves its KS distance up: the interval can sit above a small KS, and
    its upper end is a cautious bound (BCa, which corrects such bias, fails on a statistic near zero)."""
    values = np.asarray(percentiles, dtype=np.float64)
    ids, where = np.unique(conversation, return_inverse=True)
    members = [np.flatnonzero(where == k) for k in range(len(ids))]

    def statistic(picked: np.ndarray) -> float:
        return ks_from_uniform(values[np.concatenate([members[int(k)] for k in picked])])

    found = stats.bootstrap((np.arange(len(ids)),), statistic, vectorized=False, n_resamples=resamples,
                            confidence_level=level, method="percentile", random_state=np.random.default_rng(seed))
    return float(found.confidence_interval.low), float(found.confidence_interval.high)


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
