"""Word-embedding baselines (Liu et al. 2016, "How NOT To Evaluate Your Dialogue System"):
average, vector extrema and greedy matching between reply and reference, over GloVe.

Replies or references with no known word score 0 (no evidence of similarity), so that every
score stays finite.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from service.components.cache import EncodeCache
from service.components.glove import GloveTable
from service.scorers.base import Item, Scorer, ScoreBatch
from service.text import words


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    """cos(a, b), 0 where either is the zero vector: no known word is no evidence of similarity.

    From exactly rounded sums of float64 products (exact for float32 vectors): the same on every CPU, where
    float32 dot products round by the SIMD width and would break the ties of equal replies by CPU, and
    exactly 1 for equal vectors (sqrt(x * x) is |x| in IEEE)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    ab, aa, bb = (math.fsum((x * y).tolist()) for x, y in ((a, b), (a, a), (b, b)))
    norm = math.sqrt(aa * bb)
    return ab / norm if norm > 0 else 0.0


def average_similarity(reply: np.ndarray, reference: np.ndarray) -> float:
    """Cosine of the mean word vectors (float32 vectors summed in float64: exact, in any order)."""
    if not len(reply) or not len(reference):
        return 0.0
    return cosine(reply.astype(np.float64).mean(axis=0), reference.astype(np.float64).mean(axis=0))


def extrema_vector(vectors: np.ndarray) -> np.ndarray:
    """Per dimension, the value of largest magnitude (Forgues et al. 2014)."""
    highest, lowest = vectors.max(axis=0), vectors.min(axis=0)
    return np.where(highest >= np.abs(lowest), highest, lowest)


def extrema_similarity(reply: np.ndarray, reference: np.ndarray) -> float:
    if not len(reply) or not len(reference):
        return 0.0
    return cosine(extrema_vector(reply), extrema_vector(reference))


# Greedy matching compares every word of one side with every word of the other, so its time and memory
# grow with the product of their lengths: it reads each side's first GREEDY_WORDS known words, at most
# GREEDY_WORDS² cosines a pair. A text of up to 2,000 characters has at most 2,000 words: none is cut.
GREEDY_WORDS = 2000
SAME_WORD_GAP = 1e-12


def greedy_similarity(reply: np.ndarray, reference: np.ndarray) -> float:
    """Each word matched to its most similar word on the other side, both directions averaged
    (the first GREEDY_WORDS of each side)."""
    if not len(reply) or not len(reference):
        return 0.0
    reply, reference = reply[:GREEDY_WORDS].astype(np.float64), reference[:GREEDY_WORDS].astype(np.float64)

    def unit(m: np.ndarray) -> np.ndarray:
        norms = np.linalg.norm(m, axis=1, keepdims=True)
        return m / np.where(norms > 0, norms, 1.0)

    sims = unit(reply) @ unit(reference).T
    # A word matched with itself scores exactly 1, as in cosine(), so that equal replies tie on every CPU:
    # in float64 it lands within a few ulps of 1, and no two of the 50,000 served vectors agree to 1e-4 in
    # every dimension once unit (1 - cos > 1e-9).
    sims[sims > 1 - SAME_WORD_GAP] = 1.0
    return float((sims.max(axis=1).mean() + sims.max(axis=0).mean()) / 2.0)


class _EmbeddingScorer(Scorer):
    computes = "referenced"
    similarity = staticmethod(average_similarity)

    @property
    def context_turns(self) -> int | None:
        return 0  # the reply against the reference only

    def _load(self) -> None:
        self.glove: GloveTable = self.components["glove-50d"]

    def _score(self, items: list[Item], options: dict[str, Any], cache: EncodeCache) -> ScoreBatch:
        scores = [
            self.similarity(self.glove.embed(words(item.response)), self.glove.embed(words(item.reference or "")))
            for item in items
        ]
        return ScoreBatch(scores)


class EmbeddingAverage(_EmbeddingScorer):
    similarity = staticmethod(average_similarity)


class EmbeddingExtrema(_EmbeddingScorer):
    similarity = staticmethod(extrema_similarity)


class EmbeddingGreedy(_EmbeddingScorer):
    similarity = staticmethod(greedy_similarity)
