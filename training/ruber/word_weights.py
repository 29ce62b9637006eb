"""Frequency weights for RUBER's pooled s_R: a / (a + p(w)), p from the training corpora's word counts.

RUBER pools word vectors by max and min on the premise that embedding training pulls common
words' vectors to the origin, so the extremes come from informative words (Tao et al. 2018,
section 2.1). GloVe 6B does not: "the", "i" and "." have vectors as long as rare words', so
their values win the pooling. Scaling each vector by the weight of Arora et al. 2017 ("A Simple
but Tough-to-Beat Baseline for Sentence Embeddings") restores the premise without training
anything. The service reads the result as `word_weights.npy`, one weight per glove-50d row.
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from service.text import words

SIF_A = 1e-3  # the paper's default; kept, not tuned on the development sets


def frequency_weights(index: dict[str, int], dialogues: list[list[str]], a: float = SIF_A) -> np.ndarray:
    """Weight a / (a + p(w)) for every row of the GloVe table; words never seen in `dialogues` get 1."""
    counts = Counter(w for dialogue in dialogues for turn in dialogue for w in words(turn))
    total = max(sum(counts.values()), 1)
    weights = np.ones(len(index), dtype=np.float32)
    for word, count in counts.items():
        row = index.get(word)
        if row is not None:
            weights[row] = a / (a + count / total)
    return weights
