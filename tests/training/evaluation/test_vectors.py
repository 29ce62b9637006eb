"""Shared vectors for evaluate and degenerate: the same scores as per-request caches, and seeds from an
embedding cache used only where the graph that made them is the one served, on the same provider."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from service.artifacts import openvino
from service.artifacts.providers import CPU
from service.artifacts.runtime import Runtime, RuntimeSettings
from service.components.cache import EncodeCache
from service.scorers.base import Item
from service.store.model_store import ModelStore
from tests.conftest import copy_store
from training.evaluation.vectors import SharedVectors
from training.encoders.minilm.embed import EmbeddingCache, encoder_identity, load_encoder

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


def test_a_seed_that_does_not_say_where_it_was_computed_is_not_used(tmp_path: Path) -> None:
    store = ModelStore(copy_store(tmp_path / "store", ("minilm-cosine",)))
    assert store.load(), store.failures
    identity = encoder_identity(encoder=store.components["minilm-l6"])
    graph_only = {key: identity[key] for key in ("name", "version", "file", "sha256", "precision") if key in identity}
    vector = store.components["minilm-l6"].encode(["yes, coltrane mostly."])[0]
    assert not SharedVectors(store, [seeded_cache(tmp_path / "graph", graph_only, {"yes, coltrane mostly.": vector})]).vectors


def test_a_training_cache_seeds_a_cpu_ep_store_but_not_an_openvino_one(tmp_path: Path) -> None:
    """The training caches are computed on the CPU EP (load_encoder): the same graph on OpenVINO, in bf16
    where the CPU has it, gives other bits, so such a run encodes every text itself."""
    EmbeddingCache(tmp_path / "cache", load_encoder()).get(["yes, coltrane mostly.", "i love it."])
    on_cpu = ModelStore(copy_store(tmp_path / "cpu", ("minilm-cosine",)), Runtime(RuntimeSettings(providers=(CPU,))))
    assert on_cpu.load(), on_cpu.failures
    assert len(SharedVectors(on_cpu, [tmp_path / "cache"]).vectors) == 2
    if not openvino.found().usable:
        pytest.skip(f"OpenVINO: {openvino.found().reason}")
    settings = RuntimeSettings(providers=(openvino.EP, CPU), openvino_cache_dir=str(tmp_path / "openvino"))
    on_openvino = ModelStore(copy_store(tmp_path / "openvino-store", ("minilm-cosine",)), Runtime(settings))
    assert on_openvino.load(), on_openvino.failures
    assert on_openvino.components["minilm-l6"].served_files()["provider"] == openvino.EP
    assert not SharedVectors(on_openvino, [tmp_path / "cache"]).vectors
