"""The shared GloVe table: word vectors for the embedding baselines, RUBER and M_H."""
from __future__ import annotations

import json

import numpy as np

from service.components.base import Component


class GloveTable(Component):
    def _load(self) -> None:
        vocab = json.loads(self.manifest.path("vocab.json").read_text(encoding="utf-8"))
        self.vectors: np.ndarray = np.load(self.manifest.path("vectors.npy"), allow_pickle=False)
        if self.vectors.shape[0] != len(vocab):
            raise ValueError(f"{self.name}: {len(vocab)} words but {self.vectors.shape[0]} vectors")
        self.index: dict[str, int] = {word: i for i, word in enumerate(vocab)}
        self.dim = int(self.vectors.shape[1])

    def ids(self, words: list[str]) -> list[int]:
        """Row indices of the known words, in order; out-of-vocabulary words are dropped."""
        return [self.index[w] for w in words if w in self.index]

    def embed(self, words: list[str]) -> np.ndarray:
        """(n, dim) vectors of the known words; (0, dim) when none is known."""
        return self.embed_ids(self.ids(words))

    def embed_ids(self, ids: list[int]) -> np.ndarray:
        """(n, dim) vectors of these rows; (0, dim) for none."""
        if not ids:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self.vectors[ids]
