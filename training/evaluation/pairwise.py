"""Within-context pairwise agreement: what re-ranking needs of a metric.

A bot re-ranks replies to one context, so a metric serves it by ordering those replies as people
would, whatever its scale. On the sets where a context has several judged replies (DSTC7's ten
systems, the xDial sets' several bots), each pair of replies to the same context whose human scores
differ by at least MIN_GAP (1-5 scale: every set is rescaled to it) counts; the share the model orders
the same way is its agreement. A model tie counts as wrong: re-ranking must pick one.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

MIN_GAP = 0.5
MIN_PAIRS = 20  # a set with fewer pairs is not reported: a share of a handful of pairs is noise


def context_groups(keys: Sequence[Hashable]) -> np.ndarray:
    """A group id per item: items with the same key (conversation and context turns) answer the same
    context. The conversation is part of the key: two DSTC7 instances sharing a context text are two
    conversations, whose replies were never judged against each other."""
    ids: dict[Hashable, int] = {}
    return np.asarray([ids.setdefault(key, len(ids)) for key in keys], dtype=np.int64)


def pairwise_agreement(groups: np.ndarray, human: np.ndarray, model: np.ndarray, min_gap: float = MIN_GAP,
                       ) -> tuple[float | None, int]:
    """(share of the pairs the model orders as people do, number of pairs); share None without a pair."""
    groups, human, model = np.asarray(groups), np.asarray(human, float), np.asarray(model, float)
    agree = total = 0
    order = np.argsort(groups, kind="stable")
    for members in np.split(order, np.flatnonzero(np.diff(groups[order])) + 1):
        if len(members) < 2:
            continue
        human_gap = human[members][:, None] - human[members][None, :]
        model_gap = model[members][:, None] - model[members][None, :]
        counted = np.triu(np.ones_like(human_gap, dtype=bool), k=1) & (np.abs(human_gap) >= min_gap)
        total += int(counted.sum())
        agree += int((counted & (np.sign(model_gap) == np.sign(human_gap))).sum())
    return (agree / total if total else None), total
