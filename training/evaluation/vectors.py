"""Sentence vectors kept for a whole `evaluate` or `degenerate` run, and seeded from embedding caches.

Every -minilm (and mpnet) model reads the same texts; a request's EncodeCache shares their vectors
within one batch, this shares them across batches, sets and models. On the CPU EP it changes no figure:
there a text's vector does not depend on its batch, to the bit (service/components/sentence_encoder.py),
so one computed earlier by the same graph is the one computing it again gives. Seeds are the training
embedding caches (training/encoders/minilm/embed.py: EmbeddingCache), used only where the identity they
record, the graph's sha256 and where it ran (the provider, OpenVINO's precision) included, is the served one.
"""
from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path

import numpy as np

from service.components.cache import EncodeCache
from service.components.sentence_encoder import SentenceEncoder
from service.store.model_store import ModelStore
from training.encoders.minilm.embed import EmbeddingCache, encoder_identity

log = logging.getLogger("training.evaluate")


class SharedVectors:
    """(component, text) -> vector for the store's sentence encoders, kept for the whole run."""

    def __init__(self, store: ModelStore, seeds: list[Path] = ()) -> None:
        self.encoders = {name: c for name, c in store.components.items() if isinstance(c, SentenceEncoder)}
        self.vectors: dict[tuple[str, str], np.ndarray] = {}
        for path in seeds:
            self.seed(Path(path))

    def seed(self, path: Path) -> int:
        """Vectors of an embedding cache (its folder or its file) whose identity is a served encoder's; 0 otherwise."""
        path = path / EmbeddingCache.FILE if path.is_dir() else path
        with np.load(path, allow_pickle=False) as saved:
            made_by = json.loads(str(saved["encoder"]))
            served = {name: encoder_identity(encoder=encoder) for name, encoder in self.encoders.items()}
            name = next((n for n, identity in served.items() if identity == made_by), None)
            if name is None:
                log.warning("vectors in %s not used: made by %s, which no served encoder is (%s)", path, made_by,
                            served)
                return 0
            texts = json.loads(str(saved["texts"]))
            vectors = saved["vectors"].astype(np.float32)
        for text, vector in zip(texts, vectors):
            self.vectors[(name, text)] = vector
        log.info("%d %s vectors from %s", len(texts), name, path)
        return len(texts)

    def cache(self) -> EncodeCache:
        """A request's cache that reads and fills the shared vectors for the sentence encoders."""
        return _SharedCache(self)


class _SharedCache(EncodeCache):
    def __init__(self, shared: SharedVectors) -> None:
        super().__init__()
        self.shared = shared

    def get_many(self, component: str, texts: list[str], encode: Callable[[list[str]], np.ndarray]) -> np.ndarray:
        if component not in self.shared.encoders:  # the hred encoder, RUBER's GloVe encoders: per request
            return super().get_many(component, texts, encode)
        store = self.shared.vectors
        missing = list(dict.fromkeys(t for t in texts if (component, t) not in store))
        self.misses += len(missing)
        self.hits += len(texts) - len(missing)
        if missing:
            for text, vector in zip(missing, encode(missing)):
                store[(component, text)] = vector
        return np.stack([store[(component, t)] for t in texts]) if texts else np.zeros((0, 0), np.float32)
