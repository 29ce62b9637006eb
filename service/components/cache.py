"""EncodeCache: the per-request memo of encodings that components share across items and models."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np


class EncodeCache:
    """Per-request memo of utterance encodings, shared across items and models.

    Keyed by (component name, text): a request scoring with several models on one encoder
    encodes each distinct utterance once, and tokenises it once (for the limits and the encoder).
    """

    def __init__(self) -> None:
        self._vectors: dict[tuple[str, str], np.ndarray] = {}
        self._tokens: dict[tuple[str, str], Any] = {}
        self.hits = 0
        self.misses = 0

    def get_many(self, component: str, texts: list[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        """Vectors for `texts` (rows in order); `encode(list[str]) -> ndarray` runs only on unseen ones."""
        missing = list(dict.fromkeys(t for t in texts if (component, t) not in self._vectors))
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if missing:
            for text, vector in zip(missing, encode(missing)):
                self._vectors[(component, text)] = vector
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._vectors[(component, t)] for t in texts])

    def tokens(self, component: str, texts: list[str], tokenize: Callable[[list[str]], list[Any]]) -> list[Any]:
        """Each text's tokenisation, in order; `tokenize(list[str])` runs only on texts not seen before."""
        missing = list(dict.fromkeys(t for t in texts if (component, t) not in self._tokens))
        if missing:
            for text, encoding in zip(missing, tokenize(missing)):
                self._tokens[(component, text)] = encoding
        return [self._tokens[(component, t)] for t in texts]
