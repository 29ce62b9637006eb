"""EncodeCache: the per-request memo of encodings that components share across items and models."""
from __future__ import annotations

import numpy as np


class EncodeCache:
    """Per-request memo of utterance encodings, shared across items and models.

    Keyed by (component name, text): a request scoring with several models on one encoder
    encodes each distinct utterance once.
    """

    def __init__(self) -> None:
        self._vectors: dict[tuple[str, str], np.ndarray] = {}
        self.hits = 0
        self.misses = 0

    def get_many(self, component: str, texts: list[str], encode) -> np.ndarray:
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
