"""Canonically equivalent spellings (NFC and NFD) of the same texts score bit-identically on every served
model, through /score, /rerank and v2 infer: texts are read in NFC where items are made (scorers/base.py)."""
from __future__ import annotations

import unicodedata

import pytest

CONTEXT = ["où étiez-vous hier soir ?", "we went to zürich for the weekend."]
RESPONSE = "we had a lovely crème brûlée at the café in zürich."
REFERENCE = "we had a lovely crème brûlée at the café in zürich."
TURNS = [{"speaker": "user", "text": CONTEXT[1]}, {"speaker": "bot", "text": RESPONSE},
         {"speaker": "user", "text": "naïve question: was it açaí?"}, {"speaker": "bot", "text": "no, crème brûlée."}]


def _nfd(value):
    if isinstance(value, str):
        return unicodedata.normalize("NFD", value)
    if isinstance(value, list):
        return [_nfd(v) for v in value]
    if isinstance(value, dict):
        return {k: (v if k == "speaker" else _nfd(v)) for k, v in value.items()}
    return value


@pytest.fixture(scope="module")
def client(full_app):
    return full_app.test_client()


def _models(client) -> list[dict]:
    models = client.get("/models").get_json()["models"]
    assert len(models) >= 6
    return models


def test_nfd_and_nfc_texts_score_alike_on_every_served_model(client):
    assert _nfd(RESPONSE) != RESPONSE
    for model in _models(client):
        item = {"turns": TURNS} if model["kind"] == "dialogue" else {
            "context": CONTEXT, "response": RESPONSE, "reference": REFERENCE}
        composed = client.post("/score", json={"model": model["name"], "items": [item]})
        assert composed.status_code == 200, (model["name"], composed.get_json())
        mixed = {**item, "turns": [_nfd(t) if t["speaker"] == "bot" else t for t in TURNS]} if "turns" in item \
            else {**item, "response": _nfd(RESPONSE)}  # a reply spelt otherwise than its reference and context
        for spelt in (_nfd(item), mixed):
            decomposed = client.post("/score", json={"model": model["name"], "items": [spelt]}).get_json()
            assert decomposed["scores"] == composed.get_json()["scores"], model["name"]
            assert decomposed.get("details") == composed.get_json().get("details"), model["name"]


def test_nfd_candidates_rank_as_nfc_ones_and_are_echoed_as_sent(client):
    candidates = [RESPONSE, "ok.", "naïve, but fine"]
    for model in ("unref-minilm", "bleu4", "ruber"):
        body = {"model": model, "context": CONTEXT, "candidates": candidates, "reference": REFERENCE}
        composed = client.post("/rerank", json=body).get_json()["ranking"]
        decomposed = client.post("/rerank", json={**body, "candidates": _nfd(candidates)}).get_json()["ranking"]
        assert [(r["index"], r["score"]) for r in decomposed] == [(r["index"], r["score"]) for r in composed]
        assert [r["response"] for r in decomposed] == [_nfd(candidates[r["index"]]) for r in decomposed]


def test_nfd_v2_inputs_score_as_nfc_ones(client):
    def infer(texts: dict[str, str]):
        inputs = [{"name": k, "datatype": "BYTES", "shape": [1], "data": [v]} for k, v in texts.items()]
        return client.post("/v2/models/bleu4/infer", json={"inputs": inputs}).get_json()["outputs"]

    texts = {"context": "\n".join(CONTEXT), "response": RESPONSE, "reference": REFERENCE}
    assert infer({**texts, "response": _nfd(RESPONSE)}) == infer(texts)
