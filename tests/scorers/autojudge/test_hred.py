"""The served AutoJudge: the whole chain (tiny VHRED + head trained, exported, loaded, scored and
used to re-rank over HTTP, without references) and, where built, the committed model_store/autojudge."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from service.components.cache import EncodeCache
from service.scorers.base import Item, soft_bound
from tests.conftest import copy_store
from tests.hred_tiny import tiny_store

torch.set_num_threads(1)

ITEMS = [
    Item(["hey, what do you want to do tonight?", "why don't we go see a movie?"], "nah, let's do something active."),
    Item(["where is the station?"], "go straight and turn left at the bank."),
    Item(["do you like cats?"], "the stock market fell by two percent today."),
    Item([], "hello"),
    Item(["what time is it?"] * 20, "it is " + "very " * 300 + "late."),
]


@pytest.fixture(scope="module")
def store_root(tmp_path_factory):
    return tiny_store(tmp_path_factory.mktemp("chain"))


def check_batch_invariance(scorer) -> None:
    together = scorer.score(ITEMS).scores
    assert np.all(np.isfinite(together))
    for item, score in zip(ITEMS, together):
        assert scorer.score([item]).scores[0] == pytest.approx(score, abs=1e-5)


@pytest.mark.data
def test_tiny_chain_scores_without_reference(store_root) -> None:
    from service.store.model_store import ModelStore

    store = ModelStore(store_root)
    assert store.load(), store.failures
    scorer = store.scorers["autojudge"]
    assert scorer.kind == "unreferenced" and scorer.manifest.requires == ["context", "response"]
    check_batch_invariance(scorer)
    with_reference = Item(ITEMS[1].context, ITEMS[1].response, "something else entirely")
    assert scorer.score([with_reference]).scores[0] == pytest.approx(scorer.score([ITEMS[1]]).scores[0])


@pytest.mark.data
def test_rerank_over_http(store_root) -> None:
    from service.app import create_app

    client = create_app({"model_store": store_root, "load_sync": True}).test_client()
    candidates = ["sure, let's go.", "the moon is made of cheese.", "", "sure, let's go."]
    response = client.post("/rerank", json={"model": "autojudge", "context": ["shall we go out?"],
                                            "candidates": candidates})
    assert response.status_code == 200, response.get_json()
    ranking = response.get_json()["ranking"]
    assert sorted(r["index"] for r in ranking) == [0, 1, 2, 3]
    scores = [r["score"] for r in ranking]
    assert scores == sorted(scores, reverse=True)
    first = [r["index"] for r in ranking if r["index"] in (0, 3)]
    assert first == [0, 3]  # identical candidates tie and keep their order


def test_committed_autojudge(tmp_path) -> None:
    from service.store.model_store import ModelStore

    store = ModelStore(copy_store(tmp_path, ("autojudge",)))
    assert store.load(), store.failures
    scorer = store.scorers["autojudge"]
    check_batch_invariance(scorer)
    assert scorer.manifest.card["training_run"]["correlations"]["convo_split"]["pearson"] is not None
    # A reply far from the training data: the unbounded head gave 6.09 here before soft_bound.
    low, high = scorer.manifest.score_range
    scores = scorer.score([Item(["שלום"], "مرحبا كيف حالك"), Item(["hi, how are you?"], "fine thanks")]).scores
    assert all(low < s < high for s in scores), scores


COMMITTED_ITEMS = [
    Item(["hey, what do you want to do tonight?", "why don't we go see a movie?"], "nah, let's do something active."),
    Item(["where is the station?"], "go straight and turn left at the bank."),
    Item(["do you like cats?"], "the stock market fell by two percent today."),
    Item(["what time is it?"] * 3, "it is late."),
]


def test_committed_autojudge_scores_c_transpose_m_r_with_the_context_as_c(tmp_path) -> None:
    """Deriu & Cieliebak's score (c^T M r - alpha) / beta, recomputed in numpy from the weights in the
    committed graph and the encoder's context and reply vectors. M is not symmetric, so feeding the
    reply as c and the context as r (r^T M c) gives other scores."""
    import onnx
    from onnx import numpy_helper

    from service.store.model_store import ModelStore

    store = ModelStore(copy_store(tmp_path, ("autojudge",)))
    assert store.load(), store.failures
    scorer = store.scorers["autojudge"]
    head = scorer.manifest.path(scorer.manifest.config.get("head", scorer.head_file))
    weights = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(str(head)).graph.initializer}
    m, alpha, beta = weights["M"], float(weights["alpha"]), float(weights["beta"])
    assert not np.allclose(m, m.T, atol=1e-3)  # the premise: c and r are not interchangeable

    cache = EncodeCache()
    c = scorer.encoder.encode_contexts([item.context for item in COMMITTED_ITEMS], cache).astype(np.float64)
    r = scorer.encoder.encode_responses([item.response for item in COMMITTED_ITEMS], cache).astype(np.float64)
    expected = soft_bound((np.einsum("bi,ij,bj->b", c, m, r) - alpha) / beta, *scorer.manifest.score_range)
    assert scorer.score(COMMITTED_ITEMS).scores == pytest.approx(list(expected), abs=1e-4)
