"""The served ADEM: the whole chain (tiny VHRED + head trained, exported, loaded by the store, scored
over HTTP) and, where it is built, the committed model_store/adem."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from service.components.cache import EncodeCache
from service.scorers.base import Item
from tests.conftest import copy_store
from tests.hred_tiny import tiny_store

torch.set_num_threads(1)

ITEMS = [
    Item(["hey, what do you want to do tonight?", "why don't we go see a movie?"],
         "nah, let's do something active.", "yeah, the film about turing looks great!"),
    Item(["where is the station?"], "go straight and turn left at the bank.", "it is two blocks from here."),
    Item(["do you like cats?"], "the stock market fell by two percent today.", "yes, i have two of them."),
    Item(["hi"], "", "hello"),
    Item(["what time is it?"] * 20, "it is " + "very " * 300 + "late.", "about ten."),
]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from service.store.model_store import ModelStore

    store = ModelStore(tiny_store(tmp_path_factory.mktemp("chain")))
    assert store.load(), store.failures
    return store


def check_batch_invariance(scorer) -> None:
    together = scorer.score(ITEMS).scores
    for item, score in zip(ITEMS, together):
        assert scorer.score([item]).scores[0] == pytest.approx(score, abs=1e-5)
    assert scorer.score(list(reversed(ITEMS))).scores == pytest.approx(list(reversed(together)), abs=1e-5)


@pytest.mark.data
def test_tiny_chain_loads_and_scores_finite_batch_invariant(tiny) -> None:
    scorer = tiny.scorers["adem"]
    assert scorer.kind == "referenced" and scorer.manifest.uses == ["hred-encoder"]
    assert scorer.manifest.config["parity_max_abs_diff"]["adem_head.onnx"] < 1e-4
    check_batch_invariance(scorer)


@pytest.mark.data
def test_reference_and_context_both_matter(tiny) -> None:
    scorer = tiny.scorers["adem"]
    base = ITEMS[0]
    other_ref = Item(base.context, base.response, "i would rather stay home and sleep.")
    other_ctx = Item(["the weather is terrible"], base.response, base.reference)
    scores = scorer.score([base, other_ref, other_ctx]).scores
    assert scores[0] != scores[1] and scores[0] != scores[2]


@pytest.mark.data
def test_shared_encoder_cache_encodes_each_text_once(tiny) -> None:
    cache = EncodeCache()
    tiny.scorers["adem"].score(ITEMS[:2], cache=cache)
    misses = cache.misses
    tiny.scorers["autojudge"].score(ITEMS[:2], cache=cache)  # same encoder: context and reply already known
    assert cache.misses == misses and cache.hits > 0


class CountingSession:
    """An ONNX Runtime session that counts the rows it is run on (instrumentation, not a stand-in)."""

    def __init__(self, session) -> None:
        self.session, self.rows = session, 0

    def run(self, *args):
        self.rows += next(iter(args[-1].values())).shape[0]  # the feeds: {name: array}, batch first
        return self.session.run(*args)


@pytest.mark.data
def test_a_context_is_encoded_once_per_request_across_items_and_models(tiny, monkeypatch) -> None:
    # 11 context-graph rows for 6 distinct inputs: the context state was not cached.
    encoder = tiny.scorers["adem"].components["hred-encoder"]
    counting = CountingSession(encoder.context_session)
    monkeypatch.setattr(encoder, "context_session", counting)
    items = [ITEMS[0], ITEMS[1], ITEMS[0]]  # one exact duplicate
    cache = EncodeCache()
    together = tiny.scorers["adem"].score(items, cache=cache).scores
    tiny.scorers["autojudge"].score(items, cache=cache)
    distinct = {tuple(i.context) for i in items} | {i.response for i in items} | {i.reference for i in items}
    assert counting.rows == len(distinct)  # 2 contexts, 2 replies, 2 references: each once
    alone = [tiny.scorers["adem"].score([i]).scores[0] for i in items]
    assert together == pytest.approx(alone, abs=1e-5)  # as check_batch_invariance: GEMM rows round apart


@pytest.mark.data
def test_served_over_http(tiny, tmp_path) -> None:
    from service.app import create_app

    app = create_app({"model_store": tiny.root, "load_sync": True})
    client = app.test_client()
    listed = {m["name"]: m for m in client.get("/models").get_json()["models"]}
    assert listed["adem"]["requires"] == ["context", "response", "reference"]
    body = {"model": "adem", "items": [{"context": i.context, "response": i.response, "reference": i.reference}
                                       for i in ITEMS[:3]]}
    response = client.post("/score", json=body)
    assert response.status_code == 200, response.get_json()
    assert np.all(np.isfinite(response.get_json()["scores"]))
    # as the contract's example: adem answers each item's two terms
    assert [sorted(d) for d in response.get_json()["details"]] == [["s_ref", "s_unref"]] * 3
    missing = client.post("/score", json={"model": "adem", "items": [{"context": ["hi"], "response": "yo"}]})
    assert missing.status_code == 422


def check_terms(scorer) -> None:
    """details hold c^T M r_hat (s_unref) and r^T N r_hat (s_ref); with config's alpha and beta they give
    back the score wherever the soft bound leaves it alone, and only s_ref follows the reference."""
    from service.scorers.base import soft_bound

    batch = scorer.score(ITEMS)
    alpha, beta = scorer.manifest.config["alpha"], scorer.manifest.config["beta"]
    recomposed = np.array([(d["s_unref"] + d["s_ref"] - alpha) / beta for d in batch.details])
    assert batch.scores == pytest.approx(list(soft_bound(recomposed, 1.0, 5.0)), abs=1e-5)
    other = scorer.score([Item(ITEMS[0].context, ITEMS[0].response, ITEMS[1].reference)]).details[0]
    assert other["s_unref"] == pytest.approx(batch.details[0]["s_unref"], abs=1e-5)
    assert other["s_ref"] != pytest.approx(batch.details[0]["s_ref"], abs=1e-4)


@pytest.mark.data
def test_tiny_chain_details_are_the_terms_of_the_score(tiny) -> None:
    check_terms(tiny.scorers["adem"])


@pytest.mark.data
def test_a_head_exported_without_terms_is_served_without_details(tiny, tmp_path) -> None:
    """Heads of an older export return the score alone: they still load and score."""
    import onnx

    from service.artifacts.manifest import read_manifest, write_manifest
    from service.store.model_store import ModelStore

    root = Path(shutil.copytree(tiny.root, tmp_path / "store"))
    graph = onnx.load(str(root / "adem" / "adem_head.onnx"))
    for output in [o for o in graph.graph.output if o.name != "score"]:
        graph.graph.output.remove(output)
    onnx.save(graph, str(root / "adem" / "adem_head.onnx"))
    old = read_manifest(root / "adem")
    write_manifest(root / "adem", name="adem", version=old.version, kind=old.kind, scorer=old.scorer,
                   score_range=tuple(old.score_range), uses=old.uses, config=old.config, card=old.card)
    store = ModelStore(root)
    assert store.load(), store.failures
    batch = store.scorers["adem"].score(ITEMS)
    assert batch.details is None
    assert batch.scores == pytest.approx(tiny.scorers["adem"].score(ITEMS).scores, abs=1e-6)


def test_committed_adem(tmp_path) -> None:
    from service.store.model_store import ModelStore

    store = ModelStore(copy_store(tmp_path, ("adem",)))
    assert store.load(), store.failures
    scorer = store.scorers["adem"]
    check_batch_invariance(scorer)
    card = scorer.manifest.card
    assert card["training_run"]["correlations"]["dev"] and card["citation"].startswith("Lowe")
    assert card["correlations"]["dstc7"]["pearson"] == card["evaluate"]["item_level"]["dstc7"]["pearson"]
    check_terms(scorer)
    good = Item(["where is the station?"], "it is two blocks from here, turn left at the bank.",
                "go straight and turn left at the bank.")
    assert 0.0 < scorer.score([good]).scores[0] < 6.0


def test_a_head_without_recorded_encoder_files_is_served_with_a_warning(tmp_path, caplog) -> None:
    """An export from before config.encoder_files: nothing says it is wrong, but the check cannot be made."""
    import json
    import logging

    from service.artifacts.runtime import Runtime, RuntimeSettings
    from service.store.model_store import ModelStore

    root = copy_store(tmp_path / "store", ("adem",))
    manifest = json.loads((root / "adem" / "manifest.json").read_text())
    del manifest["config"]["encoder_files"]
    (root / "adem" / "manifest.json").write_text(json.dumps(manifest))
    store = ModelStore(root, Runtime(RuntimeSettings(intra_op_threads=1)), ("adem",))
    with caplog.at_level(logging.WARNING):
        assert store.load(), store.failures
    assert "records no config.encoder_files" in caplog.text
