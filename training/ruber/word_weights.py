"""Frequency weights for RUBER's pooled s_R, a / (a + p(w)) (Arora et al. 2017): GloVe does not pull
common words to the origin as RUBER's max/min pooling assumes, so the weights do."""
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
