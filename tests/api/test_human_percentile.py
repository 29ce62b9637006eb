"""human_percentile through the API: each scored item and ranked candidate of a model whose folder ships a
table gets its share of the table below its score; a skipped item gets null; a model without one adds nothing."""
from __future__ import annotations

import json

import numpy as np
import pytest

from service.artifacts.manifest import update_card
from service.scorers.percentile import FILE
from tests.conftest import copy_store

MODEL = "unref-minilm-commercial"
TABLE = np.linspace(1.0, 5.0, 401)
CONTEXT = ["how was your weekend?"]
CANDIDATES = ["great, i went hiking with my sister!", "how was your weekend?", "fine.", "the train leaves at noon."]


def share_below(score: float) -> float:
    return float(((TABLE < score).sum() + 0.5 * (TABLE == score).sum()) / len(TABLE))


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory):
    from service.app import create_app

    store = copy_store(tmp_path_factory.mktemp("store"), (MODEL, "length"))
    folder = store / MODEL
    (folder / FILE).write_text(json.dumps({"source": "test", "n": len(TABLE), "scores": TABLE.tolist()}))
    update_card(folder)  # lists the table with its sha256
    app = create_app({"model_store": store, "load_sync": True, "models": [MODEL, "length"]})
    app.config["TESTING"] = True
    return app.test_client()


def test_each_scored_item_gets_its_share_of_the_table_below_it(client):
    items = [{"context": CONTEXT, "response": r} for r in CANDIDATES]
    body = client.post("/score", json={"model": MODEL, "items": items}).get_json()
    assert body["human_percentile"] == pytest.approx([share_below(s) for s in body["scores"]])
    assert len(set(body["human_percentile"])) > 1


def test_each_ranked_candidate_carries_it_best_first(client):
    body = client.post("/rerank", json={"model": MODEL, "context": CONTEXT, "candidates": CANDIDATES}).get_json()
    ranking = body["ranking"]
    assert [r["human_percentile"] for r in ranking] == pytest.approx([share_below(r["score"]) for r in ranking])
    assert [r["human_percentile"] for r in ranking] == sorted((r["human_percentile"] for r in ranking), reverse=True)


def test_a_skipped_item_gets_null_and_a_model_without_a_table_adds_nothing(client):
    items = [{"context": CONTEXT, "response": CANDIDATES[0]}, {"context": CONTEXT}]
    body = client.post("/score", json={"models": [MODEL, "length"], "items": items, "on_invalid": "skip"}).get_json()
    mine, length = body["results"][MODEL], body["results"]["length"]
    assert mine["human_percentile"][1] is None and 0.0 <= mine["human_percentile"][0] <= 1.0
    assert "human_percentile" not in length
    ranked = client.post("/rerank", json={"model": "length", "context": CONTEXT, "candidates": CANDIDATES}).get_json()
    assert all("human_percentile" not in r for r in ranked["ranking"])
