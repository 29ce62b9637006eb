"""The served RUBER model: its pieces against hand-worked values, options, and batch invariance."""
from __future__ import annotations

import numpy as np
import pytest

from service.scorers.base import Item, OptionError
from service.scorers.ruber.blending import BLENDS, blend, normalise
from service.scorers.ruber.glove import embed_padded, pooled, query_text, referenced_score
from tests.conftest import copy_store


ITEMS = [
    Item(["hey, what do you want to do tonight?", "why don't we go see a movie?"],
         "nah, let's do something active.", "yeah, the film about turing looks great!"),
    Item(["where is the station?"], "go straight and turn left at the bank.", "it is two blocks from here."),
    Item(["do you like cats?"], "the stock market fell by two percent today.", "yes, i have two of them."),
    Item(["hi"], "", "hello"),
    Item(["what time is it?"], "it is " + "very " * 300 + "late.", "about ten."),
]


@pytest.fixture(scope="module")
def scorer(tmp_path_factory):
    from service.store.model_store import ModelStore

    store = ModelStore(copy_store(tmp_path_factory.mktemp("ruber"), ("ruber",)))
    assert store.load(), store.failures
    return store.scorers["ruber"]


def test_pooling_and_referenced_cosine_by_hand():
    vectors = np.array([[1.0, -2.0], [3.0, 0.5]], dtype=np.float32)
    np.testing.assert_allclose(pooled(vectors), [3.0, 0.5, 1.0, -2.0])
    assert referenced_score(vectors, vectors) == pytest.approx(1.0)
    other = np.array([[-1.0, 2.0]], dtype=np.float32)
    a, b = pooled(vectors), pooled(other)
    assert referenced_score(vectors, other) == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))
    assert referenced_score(np.zeros((0, 2), np.float32), vectors) == 0.0


def test_normalise_clips_and_blends_are_the_papers_four():
    np.testing.assert_allclose(normalise([0.0, 0.5, 1.0, 2.0], [0.5, 1.5]), [0.0, 0.0, 0.5, 1.0])
    a, b = np.array([0.2, 0.9]), np.array([0.8, 0.1])
    np.testing.assert_allclose(blend(a, b, "min"), [0.2, 0.1])
    np.testing.assert_allclose(blend(a, b, "max"), [0.8, 0.9])
    np.testing.assert_allclose(blend(a, b, "geometric"), np.sqrt(a * b))
    np.testing.assert_allclose(blend(a, b, "arithmetic"), (a + b) / 2)


def test_query_and_padding_helpers():
    assert query_text(["a", "b", "c"], 2) == "b c"
    embedded, lengths = embed_padded(np.eye(3, dtype=np.float32), [[0, 2], []])
    assert embedded.shape == (2, 2, 3) and lengths.tolist() == [2, 1]
    assert not embedded[1].any()


def test_manifest_holds_calibration_and_a_measured_default(scorer):
    config = scorer.manifest.config
    for part in ("s_ref", "s_unref"):
        lo, hi = config["normalisation"][part]
        assert lo < hi
    assert scorer.option_spec["blend"]["default"] in BLENDS
    assert scorer.manifest.uses == ["glove-50d"] and scorer.kind == "referenced"
    assert scorer.manifest.card["correlations"]


def test_scores_are_bounded_and_components_recombine(scorer):
    for how in BLENDS:
        batch = scorer.score(ITEMS, {"blend": how, "components": True})
        assert all(0.0 <= s <= 1.0 for s in batch.scores)
        expected = blend(np.array([d["s_ref"] for d in batch.details]),
                         np.array([d["s_unref"] for d in batch.details]), how)
        np.testing.assert_allclose(batch.scores, expected, atol=1e-12)
    assert scorer.score(ITEMS).details is None


def test_a_relevant_reply_beats_an_unrelated_one(scorer):
    relevant = Item(["where is the station?"], "the station is on the next street.", "it is two blocks from here.")
    unrelated = Item(["where is the station?"], "i love chocolate cake.", "it is two blocks from here.")
    details = scorer.score([relevant, unrelated], {"components": True}).details
    assert details[0]["s_unref"] > details[1]["s_unref"]
    assert details[0]["s_ref"] > details[1]["s_ref"]


def test_same_score_alone_and_in_any_batch(scorer):
    together = scorer.score(ITEMS).scores
    alone = [scorer.score([item]).scores[0] for item in ITEMS]
    reversed_batch = scorer.score(ITEMS[::-1]).scores[::-1]
    np.testing.assert_allclose(together, alone, atol=1e-6)
    np.testing.assert_allclose(together, reversed_batch, atol=1e-6)


def test_bad_options_are_refused(scorer):
    with pytest.raises(OptionError):
        scorer.score(ITEMS[:1], {"blend": "median"})
    with pytest.raises(OptionError):
        scorer.score(ITEMS[:1], {"weights": [1, 2]})
    with pytest.raises(OptionError):
        scorer.score(ITEMS[:1], {"word_weights": "idf"})


def test_frequency_weights_let_the_informative_words_lead_the_pooling(scorer):
    """Replies that share only common words with the reference lose s_R under the weights; the
    paper's unweighted formula stays one option away and gives its own (raw) value."""
    commonplace = Item(["what did you do?"], "i went to the cinema.", "i went to the gym.")
    raw_plain = scorer.referenced([commonplace], "none")[0]
    raw_weighted = scorer.referenced([commonplace], "frequency")[0]
    assert raw_weighted < raw_plain
    assert scorer.word_weights[scorer.glove.index["the"]] < scorer.word_weights[scorer.glove.index["cinema"]]
    assert scorer.option_spec["word_weights"]["choices"] == ["none", "frequency"]
    for weighting in ("none", "frequency"):
        details = scorer.score([commonplace], {"word_weights": weighting, "components": True}).details[0]
        expected = normalise([scorer.referenced([commonplace], weighting)[0]], scorer.reference_bounds(weighting))
        assert details["s_ref"] == pytest.approx(float(expected[0]))


def test_a_model_without_the_weights_file_offers_only_the_papers_pooling(tmp_path):
    """Artifacts made before word weights existed still load; asking them for weights is a 422, not a 500."""
    import json

    from service.store.model_store import ModelStore

    root = copy_store(tmp_path, ("ruber",))
    (root / "ruber" / "word_weights.npy").unlink()
    manifest = json.loads((root / "ruber" / "manifest.json").read_text())
    del manifest["files"]["word_weights.npy"]
    manifest["options"].pop("word_weights")
    (root / "ruber" / "manifest.json").write_text(json.dumps(manifest))
    store = ModelStore(root)
    assert store.load(), store.failures
    old = store.scorers["ruber"]
    assert old.word_weights is None and old.option_spec["word_weights"]["choices"] == ["none"]
    assert len(old.score(ITEMS).scores) == len(ITEMS)
    with pytest.raises(OptionError):
        old.score(ITEMS[:1], {"word_weights": "frequency"})
