"""`on_long_context: "keep_last"`: a context over the turn limit is cut to the turns the models read, and the
answer says how many went; without it the server answers as before (413)."""
from __future__ import annotations

import pytest

CANDIDATES = ["great, i went hiking with my sister!", "i don't know.", "the weather is nice", "no"]


def long_context(turns: int) -> list[str]:
    return [f"turn {i}: we talked about the {('hiking', 'weather', 'movie', 'dinner')[i % 4]} plans" for i in range(turns)]


def models(app) -> dict[str, dict]:
    return {m["name"]: m for m in app.test_client().get("/models").get_json()["models"]}


def test_an_80_turn_context_is_reranked_with_keep_last_and_refused_without(full_app):
    client = full_app.test_client()
    context = long_context(80)
    body = {"model": "unref-minilm", "context": context, "candidates": CANDIDATES}
    refused = client.post("/rerank", json=body)
    assert refused.status_code == 413
    assert refused.get_json()["error"]["details"] == {"context": "80 turns; the limit is 50."}

    kept = client.post("/rerank", json={**body, "on_long_context": "keep_last"})
    assert kept.status_code == 200, kept.get_json()
    answer = kept.get_json()
    assert answer["context_dropped"] == 75  # unref-minilm reads the last 5 turns
    # The same ranking, to the bit, as the last five turns sent alone, which answer without the field.
    alone = client.post("/rerank", json={**body, "context": context[-5:]}).get_json()
    assert "context_dropped" not in alone
    assert answer["ranking"] == alone["ranking"]


def test_score_says_per_item_how_many_turns_it_dropped(full_app):
    client = full_app.test_client()
    items = [{"context": long_context(80), "response": "sounds good"}, {"context": ["hi"], "response": "hello"},
             {"context": long_context(7), "response": "sure"}]
    both = client.post("/score", json={"models": ["autojudge-minilm", "unref-minilm"], "items": items,
                                       "on_long_context": "keep_last"})
    assert both.status_code == 200, both.get_json()
    reads = 5  # the most of the two: unref-minilm's signals read the last five turns
    assert both.get_json()["context_dropped"] == [80 - reads, 0, 7 - reads]
    # a model reading fewer turns drops more: the length baseline reads none, and one turn is always kept
    alone = client.post("/score", json={"model": "length", "items": items, "on_long_context": "keep_last"})
    assert alone.get_json()["context_dropped"] == [79, 0, 6]
    assert client.post("/score", json={"model": "length", "items": items}).status_code == 413


@pytest.mark.parametrize("turns", [12])
def test_every_reply_model_scores_the_cut_context_as_the_whole(full_app, turns):
    """Each model's `context_turns` is at least what it reads: its score of a context within the limit is the
    same with keep_last (cut) as without (whole), for every served reply model and its reference-free part."""
    client = full_app.test_client()
    context = long_context(turns)
    item = {"context": context, "response": "we could go hiking on sunday.", "reference": "let's hike then."}
    for name, info in models(full_app).items():
        if info["kind"] == "dialogue":
            continue
        for options in ({}, {"reference_free": True}) if "reference_free" in info["options"] else ({},):
            whole = client.post("/score", json={"model": name, "items": [item], "options": options}).get_json()
            cut = client.post("/score", json={"model": name, "items": [item], "options": options,
                                              "on_long_context": "keep_last"}).get_json()
            assert cut["scores"] == whole["scores"], (name, options)
            assert 0 <= cut["context_dropped"][0] < turns, name


def test_a_dialogue_models_turns_are_never_cut(full_app):
    turns = [{"speaker": "user" if i % 2 == 0 else "bot", "text": f"turn number {i} about hiking"} for i in range(60)]
    answer = full_app.test_client().post("/score", json={"model": "mh", "items": [{"turns": turns}],
                                                         "on_long_context": "keep_last"})
    assert answer.status_code == 200 and answer.get_json()["context_dropped"] == [0]


def test_rerank_under_keep_last_says_0_where_no_turn_went(client):
    answer = client.post("/rerank", json={"model": "length", "context": ["hi"], "candidates": ["a", "b c"],
                                          "on_long_context": "keep_last"})
    assert answer.status_code == 200 and answer.get_json()["context_dropped"] == 0


def test_the_option_is_validated(client):
    bad = client.post("/rerank", json={"model": "length", "context": ["a"], "candidates": ["b"],
                                       "on_long_context": "keep_first"})
    assert bad.status_code == 422
    assert "on_long_context" in bad.get_json()["error"]["details"]


def test_errors_name_the_turns_as_sent_not_as_cut(full_app):
    """A bad 80th turn was named `items.0.context.4`, its place in the cut context, not the one the client sent."""
    client = full_app.test_client()
    context = long_context(79)
    bad = client.post("/score", json={"model": "unref-minilm", "on_long_context": "keep_last",
                                      "items": [{"context": [*context, 5], "response": "x"}]})
    assert bad.status_code == 422 and set(bad.get_json()["error"]["details"]) == {"items.0.context.79"}
    long_turn = "word " * 5000
    skipped = client.post("/score", json={"model": "unref-minilm", "on_long_context": "keep_last", "on_invalid": "skip",
                                          "items": [{"context": [*context, long_turn], "response": "x"},
                                                    {"context": ["hi"], "response": "hello"}]})
    assert skipped.status_code == 200 and set(skipped.get_json()["errors"]) == {"items.0.context.79"}
    too_long = client.post("/rerank", json={"model": "unref-minilm", "on_long_context": "keep_last",
                                            "context": [*context, long_turn], "candidates": CANDIDATES})
    assert too_long.status_code == 413 and set(too_long.get_json()["error"]["details"]) == {"context.79"}
