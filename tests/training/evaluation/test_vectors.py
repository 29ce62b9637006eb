"""Shared vectors for evaluate and degenerate: the same scores as per-request caches, and seeds from an
embedding cache used only where the graph that made them is the one served."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from service.components.cache import EncodeCache
from service.scorers.base import Item
from service.store.model_store import ModelStore
from tests.conftest import copy_store
from training.evaluation.vectors import SharedVectors
from training.encoders.minilm.embed import EmbeddingCache, encoder_identity

ITEMS = [Item(["do you like jazz?"], "yes, coltrane mostly.", "i love it."),
         Item(["where is the station?"], "two blocks north.", "around the corner.")]


def seeded_cache(folder: Path, identity: dict, vectors: dict[str, np.ndarray]) -> Path:
    folder.mkdir(parents=True)
    np.savez(folder / EmbeddingCache.FILE, texts=np.array(json.dumps(list(vectors))),
             vectors=np.stack(list(vectors.values())), encoder=np.array(json.dumps(identity)))
    return folder


def test_shared_vectors_score_as_request_caches_do_and_take_seeds_only_from_the_served_graph(tmp_path: Path):
    store = ModelStore(copy_store(tmp_path / "store", ("minilm-cosine",)))
    assert store.load(), store.failures
    scorer = store.scorers["minilm-cosine"]
    alone = scorer.score(ITEMS, None, EncodeCache()).scores
    shared = SharedVectors(store)
    assert scorer.score(ITEMS, None, shared.cache()).scores == alone
    assert scorer.score(ITEMS, None, shared.cache()).scores == alone  # the second time from the shared vectors

    identity = encoder_identity(encoder=store.components["minilm-l6"])
    flipped = {text: -store.components["minilm-l6"].encode([text])[0] for text in ("yes, coltrane mostly.",)}
    other = {**identity, "sha256": "0" * 64}
    ignored = SharedVectors(store, [seeded_cache(tmp_path / "other", other, flipped)])
    assert not ignored.vectors and scorer.score(ITEMS, None, ignored.cache()).scores == alone
    used = SharedVectors(store, [seeded_cache(tmp_path / "same", identity, flipped)])
    assert len(used.vectors) == 1
    scores = scorer.score(ITEMS, None, used.cache()).scores
    assert scores[1] == alone[1] and scores[0] == -alone[0]  # the seeded vector was read, as given
