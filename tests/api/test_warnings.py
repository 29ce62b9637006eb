"""`warnings` on /score and /rerank: replies in another language or script, without words, or blank are
named (index, code, message) and counted; the scores are still given, and English replies draw none."""
from __future__ import annotations

import pytest

from tests.conftest import metric_sample

CONTEXT = ["hi! how was your weekend?"]


def test_russian_and_chinese_candidates_are_warned_and_english_ones_not(client):
    before = metric_sample(client, 'dialscore_warnings_total{code="not_english",endpoint="/rerank"}')
    candidates = ["great, i went hiking with my sister!", "прекрасно!", "我周末去爬山了，很开心。", "ok.",
                  "Я ходил в кино с друзьями.", "no way!"]
    answer = client.post("/rerank", json={"model": "length", "context": CONTEXT, "candidates": candidates})
    assert answer.status_code == 200
    body = answer.get_json()
    assert len(body["ranking"]) == len(candidates)  # warned, still ranked
    warned = {w["index"]: w for w in body["warnings"]}
    assert sorted(warned) == [1, 2, 4]
    assert all(w["code"] == "not_english" for w in warned.values())
    assert "Cyrillic" in warned[1]["message"] and "Han" in warned[2]["message"]
    after = metric_sample(client, 'dialscore_warnings_total{code="not_english",endpoint="/rerank"}')
    assert after - before == 3


def test_a_latin_script_language_is_warned_by_the_identifier(client):
    items = [{"context": CONTEXT, "response": "Ich weiß nicht, was du meinst."},
             {"context": CONTEXT, "response": "I don't know what you mean."}]
    body = client.post("/score", json={"model": "length", "items": items}).get_json()
    (warning,) = body["warnings"]
    assert warning["index"] == 0 and warning["code"] == "not_english" and "'de'" in warning["message"]


def test_emoji_only_and_blank_replies_are_named(client):
    items = [{"context": CONTEXT, "response": "😀😀👍"}, {"context": CONTEXT, "response": " \u200b "},
             {"context": CONTEXT, "response": "sure, sounds fun"}]
    body = client.post("/score", json={"models": ["length", "bleu4"], "items": [{**i, "reference": "fun"} for i in items]}
                       ).get_json()
    assert [(w["index"], w["code"]) for w in body["warnings"]] == [(0, "no_words"), (1, "empty")]
    assert body["results"]["length"]["scores"] == [0.0, 0.0, 3.0]


def test_english_replies_draw_no_warnings_field(client):
    body = client.post("/score", json={"model": "length", "items": [{"context": CONTEXT, "response": "Sure."}]})
    assert "warnings" not in body.get_json()


def test_skipped_items_are_not_warned_about(client):
    items = [{"context": CONTEXT, "response": "прекрасно!", "unknown": 1}, {"context": CONTEXT, "response": "да"}]
    body = client.post("/score", json={"model": "length", "items": items, "on_invalid": "skip"}).get_json()
    assert body["skipped"] == [0] and [w["index"] for w in body["warnings"]] == [1]


def test_exclude_warned_leaves_warned_candidates_out_of_the_ranking_before_top_k(full_app):
    """unref-minilm-commercial ranked "" first for "hey" (human_percentile .86, above every threshold the
    README offers): a bot that sends `exclude_warned` gets its top_k from the candidates it may send."""
    client = full_app.test_client()
    candidates = ["", "hi! how are you?", "!!!", "good, you?", "i'm good, you?"]
    request = {"model": "unref-minilm-commercial", "context": ["hey"], "candidates": candidates}
    plain = client.post("/rerank", json=request).get_json()["ranking"]
    assert plain[0]["index"] == 0  # the blank reply first: why a bot sends exclude_warned
    body = client.post("/rerank", json={**request, "top_k": 2, "exclude_warned": ["empty", "no_words"]}).get_json()
    assert body["ranking"] == [e for e in plain if e["index"] in (1, 3, 4)][:2]  # the same scores, without them
    assert [(w["index"], w["code"]) for w in body["warnings"]] == [(0, "empty"), (2, "no_words")]
    every = client.post("/rerank", json={**request, "candidates": ["", " "], "exclude_warned": ["empty"]})
    assert every.status_code == 200 and every.get_json()["ranking"] == []
    wrong = client.post("/rerank", json={**request, "exclude_warned": ["blank"]})
    assert wrong.status_code == 422 and "exclude_warned.0" in wrong.get_json()["error"]["details"]


def test_exclude_warned_leaves_out_only_the_codes_it_names(client):
    """A candidate warned with a code not named is still ranked, its warning still given."""
    body = client.post("/rerank", json={"model": "length", "context": CONTEXT, "candidates": ["", "!!!", "ok then"],
                                        "exclude_warned": ["empty"]}).get_json()
    assert sorted(r["index"] for r in body["ranking"]) == [1, 2]
    assert [(w["index"], w["code"]) for w in body["warnings"]] == [(0, "empty"), (1, "no_words")]


def test_a_refused_rerank_counts_no_warnings(full_app, monkeypatch):
    """/rerank reads the warnings before the encoder's work is checked (exclude_warned needs them): a 413 there
    must not count them, as before."""
    import dataclasses

    monkeypatch.setitem(full_app.config, "SETTINGS", dataclasses.replace(full_app.config["SETTINGS"],
                                                                        max_encoder_tokens=20))
    client = full_app.test_client()
    sample = 'dialscore_warnings_total{code="empty",endpoint="/rerank"}'
    before = metric_sample(client, sample)
    body = {"model": "minilm-cosine", "context": ["word " * 30], "candidates": ["", "hello"],
            "options": {"reference_free": True}}
    assert client.post("/rerank", json=body).status_code == 413
    assert metric_sample(client, sample) == before
    assert client.post("/rerank", json={**body, "context": ["hi"]}).status_code == 200
    assert metric_sample(client, sample) == before + 1


@pytest.mark.parametrize("model", ["adem-minilm", "autojudge-minilm", "ruber-minilm", "unref-minilm-commercial"])
def test_a_rerank_whose_every_candidate_is_excluded_runs_no_model(full_app, model):
    """No model runs on an empty batch: the heads answer one with a ValueError (a 500)."""
    client = full_app.test_client()
    sample = f'dialscore_model_seconds_count{{model="{model}"}}'
    before = metric_sample(client, sample)
    answer = client.post("/rerank", json={"model": model, "context": ["hey"], "candidates": ["", " "],
                                          "reference": "hi there", "exclude_warned": ["empty"]})
    assert answer.status_code == 200 and answer.get_json()["ranking"] == [], answer.get_json()
    assert metric_sample(client, sample) == before
