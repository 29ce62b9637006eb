"""The re-rankers, as served from the committed store: a reply that says the last turn again, three times, in
another order, or one of its words five times, scores below a good reply to the same context."""
from __future__ import annotations

import pytest

from service.components.cache import EncodeCache
from service.scorers.base import Item
from service.store.model_store import ModelStore
from tests.conftest import MODEL_STORE
from training.data.degenerate import repetition_replies, shuffled_copy

RERANKERS = ("unref-minilm-commercial", "unref-mpnet-commercial", "unref-minilm", "unref-mpnet", "unref-mpnet-minilm")
# Hand-made contexts and a good reply to each (none from a data set).
GOOD = {
    ("how was your weekend?",): "it was great, i went hiking with my sister!",
    ("what's your favourite food?",): "i love spicy thai curry, especially green curry.",
    ("i just got a puppy!", "oh nice, what breed is it?"): "a golden retriever, she's three months old.",
    ("do you like to travel?",): "yes, i went to japan last year and loved it.",
    ("what do you do for work?",): "i'm a nurse at the children's hospital.",
    ("have you seen any good movies lately?",): "i watched a documentary about octopuses, it was amazing.",
}


@pytest.fixture(scope="module", params=RERANKERS)
def model(request):
    if request.param.startswith("unref-mpnet") and not (MODEL_STORE / "mpnet-base" / "encoder-fp32.onnx").is_file():
        pytest.skip("the mpnet encoder is not built (make encoder-mpnet)")
    store = ModelStore(MODEL_STORE, models=(request.param,))
    assert store.load(), store.failures
    return store.scorers[request.param]


@pytest.mark.parametrize("kind", ["near-copy-x3", "near-copy-x2", "topic-word", "copy"])
def test_a_repetition_of_the_context_scores_below_a_good_reply(model, kind: str) -> None:
    for context, good in GOOD.items():
        bad = context[-1] if kind == "copy" else repetition_replies(list(context))[kind]
        scores = model.score([Item(list(context), good), Item(list(context), bad)], None, EncodeCache()).scores
        assert scores[1] < scores[0], (context, bad, scores)


def test_the_last_turns_words_in_another_order_score_below_a_good_reply(model) -> None:
    for context, good in GOOD.items():
        bad = shuffled_copy(list(context))
        assert sorted(bad.split()) == sorted(context[-1].split()) and bad != context[-1]
        scores = model.score([Item(list(context), good), Item(list(context), bad)], None, EncodeCache()).scores
        assert scores[1] < scores[0], (context, bad, scores)
