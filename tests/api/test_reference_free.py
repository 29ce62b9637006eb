"""`options.reference_free` through the API: a referenced model's reference-free part answers without a
reference on /score, /rerank and several models at once; anything but true is left to the options' 422."""
import pytest

CONTEXT = ["hey, what do you want to do tonight?", "why don't we go see a movie?"]
REPLIES = ["nah, let's do something active.", "why don't we go see a movie?", ""]
PART = {"reference_free": True}


@pytest.fixture(scope="module")
def client(full_app):
    return full_app.test_client()


@pytest.mark.parametrize("model", ["ruber", "ruber-minilm", "minilm-cosine"])
def test_a_part_scores_items_without_a_reference_as_it_reranks_them(client, model):
    items = [{"context": CONTEXT, "response": r} for r in REPLIES]
    scored = client.post("/score", json={"model": model, "items": items, "options": PART})
    assert scored.status_code == 200, scored.get_json()
    scores = scored.get_json()["scores"]
    with_reference = [{**item, "reference": "a reference the part does not read."} for item in items]
    again = client.post("/score", json={"model": model, "items": with_reference, "options": PART}).get_json()
    assert again["scores"] == scores
    whole = client.post("/score", json={"model": model, "items": with_reference}).get_json()
    assert whole["scores"] != scores
    ranked = client.post("/rerank", json={"model": model, "context": CONTEXT, "candidates": REPLIES, "options": PART})
    assert ranked.status_code == 200
    assert [r["score"] for r in ranked.get_json()["ranking"]] == sorted(scores, reverse=True)


def test_without_the_option_the_reference_is_still_required_and_the_message_names_the_parts(client):
    response = client.post("/rerank", json={"model": "ruber", "context": CONTEXT, "candidates": REPLIES})
    error = response.get_json()["error"]
    assert response.status_code == 422 and set(error["details"]) == {"reference"}
    assert error["message"].endswith("options.reference_free true: minilm-cosine, ruber, ruber-minilm.")
    items = [{"context": CONTEXT, "response": REPLIES[0]}]
    response = client.post("/score", json={"model": "ruber", "items": items, "options": {"reference_free": False}})
    assert response.status_code == 422 and "items.0.reference" in response.get_json()["error"]["details"]


@pytest.mark.parametrize("options, field", [({"reference_free": "yes"}, "options.reference_free"),
                                            ({"reference_free": 1}, "options.reference_free")])
def test_a_value_other_than_a_boolean_is_422_naming_the_option(client, options, field):
    items = [{"context": CONTEXT, "response": REPLIES[0], "reference": "a reference."}]
    response = client.post("/score", json={"model": "ruber", "items": items, "options": options})
    assert response.status_code == 422 and field in response.get_json()["error"]["details"]


def test_a_model_without_a_part_refuses_the_option(client):
    items = [{"context": CONTEXT, "response": REPLIES[0], "reference": "a reference."}]
    response = client.post("/score", json={"model": "adem-minilm", "items": items, "options": PART})
    assert response.status_code == 422
    assert response.get_json()["error"]["details"] == {"options.reference_free": "Unknown option for this model."}


def test_several_models_each_with_its_own_options(client):
    items = [{"context": CONTEXT, "response": r} for r in REPLIES]
    body = {"models": ["ruber", "unref-minilm"], "items": items, "options": {"ruber": PART}}
    response = client.post("/score", json=body)
    assert response.status_code == 200, response.get_json()
    alone = client.post("/score", json={"model": "ruber", "items": items, "options": PART}).get_json()
    assert response.get_json()["results"]["ruber"]["scores"] == alone["scores"]
    # a model without the option in the same request still needs its reference
    body = {"models": ["ruber", "bleu4"], "items": items, "options": {"ruber": PART}}
    response = client.post("/score", json=body)
    assert response.status_code == 422 and "bleu4" in response.get_json()["error"]["details"]["items.0.reference"]


def test_models_lists_the_option_with_what_it_does(client):
    models = {m["name"]: m for m in client.get("/models").get_json()["models"]}
    for name in ("ruber", "ruber-minilm", "minilm-cosine"):
        option = models[name]["options"]["reference_free"]
        assert option["type"] == "boolean" and option["default"] is False and "reference" in option["description"]
        assert models[name]["kind"] == "referenced"
    assert "reference_free" not in models["adem"]["options"] and "reference_free" not in models["unref-minilm"]["options"]


@pytest.mark.parametrize("options, field", [({"reference_free": "yes"}, "options.reference_free"),
                                            ({"reference_fre": True}, "options.reference_fre")])
def test_an_options_error_is_answered_before_the_missing_reference(client, options, field):
    items = [{"context": CONTEXT, "response": REPLIES[0]}]
    scored = client.post("/score", json={"model": "ruber", "items": items, "options": options})
    assert scored.status_code == 422 and list(scored.get_json()["error"]["details"]) == [field]
    ranked = client.post("/rerank", json={"model": "ruber", "context": CONTEXT, "candidates": REPLIES,
                                          "options": options})
    assert ranked.status_code == 422 and list(ranked.get_json()["error"]["details"]) == [field]
    keyed = {"models": ["ruber", "bleu4"], "items": items, "options": {"ruber": options}}
    several = client.post("/score", json=keyed)
    assert several.status_code == 422
    assert list(several.get_json()["error"]["details"]) == [field.replace("options", "options.ruber")]
    unkeyed = client.post("/score", json={**keyed, "options": options})
    assert unkeyed.status_code == 422 and list(unkeyed.get_json()["error"]["details"]) == [f"options.{field[8:]}"]
