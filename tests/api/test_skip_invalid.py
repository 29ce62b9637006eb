"""`on_invalid: "skip"`: a bad item or candidate is left out and named, the rest of the batch scored."""
import pytest

from tests.conftest import metric_sample

ITEM = {"context": ["hey, what do you want to do tonight?", "why don't we go see a movie?"],
        "response": "nah, let's do something active.", "reference": "yeah, the film about turing looks great!"}
OTHER = {"context": ["how was your weekend?"], "response": "great, i went hiking!", "reference": "fine, and yours?"}


@pytest.fixture(scope="module")
def small_limits_client(baseline_store):
    from service.app import create_app

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length", "bleu4", "rouge-l"],
                      "max_chars": 60, "max_items": 6})
    return app.test_client()


def _bad_items() -> list:
    return [ITEM,
            {**ITEM, "response": "x" * 61},                 # over the per-utterance limit (413 under reject)
            {"context": [], "response": "ok", "reference": "r"},  # invalid (422 under reject)
            {**ITEM, "reference": "   "},                   # blank reference for a referenced model
            OTHER]


def test_without_skip_one_bad_item_fails_the_request_naming_every_problem(small_limits_client):
    over = small_limits_client.post("/score", json={"model": "bleu4", "items": _bad_items()})
    assert over.status_code == 413 and set(over.get_json()["error"]["details"]) == {"items.1.response"}
    shape = [item for i, item in enumerate(_bad_items()) if i != 1]
    invalid = small_limits_client.post("/score", json={"model": "bleu4", "items": shape})
    assert invalid.status_code == 422
    assert set(invalid.get_json()["error"]["details"]) == {"items.1.context", "items.2.reference"}


def test_skip_scores_the_rest_exactly_as_alone_and_names_what_it_left_out(small_limits_client):
    response = small_limits_client.post("/score", json={"model": "bleu4", "items": _bad_items(), "on_invalid": "skip"})
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["skipped"] == [1, 2, 3]
    assert set(body["errors"]) == {"items.1.response", "items.2.context", "items.3.reference"}
    assert "limit is 60" in body["errors"]["items.1.response"]
    alone = small_limits_client.post("/score", json={"model": "bleu4", "items": [ITEM, OTHER]}).get_json()["scores"]
    assert body["scores"] == [alone[0], None, None, None, alone[1]]


def test_skip_with_several_models_puts_null_in_every_result(small_limits_client):
    body = small_limits_client.post("/score", json={"models": ["bleu4", "length"], "items": _bad_items(),
                                                    "on_invalid": "skip"}).get_json()
    assert body["skipped"] == [1, 2, 3] and body["models"] == ["bleu4", "length"]
    for name in ("bleu4", "length"):
        scores = body["results"][name]["scores"]
        assert [s is None for s in scores] == [False, True, True, True, False]
        assert "skipped" not in body["results"][name]  # said once, at the top
    assert body["results"]["length"]["scores"][0] == 6.0


def test_skip_with_nothing_wrong_answers_as_without_it(small_limits_client):
    plain = small_limits_client.post("/score", json={"model": "rouge-l", "items": [ITEM, OTHER]}).get_json()
    skip = small_limits_client.post("/score", json={"model": "rouge-l", "items": [ITEM, OTHER],
                                                    "on_invalid": "skip"}).get_json()
    assert skip == plain and "skipped" not in skip


@pytest.mark.parametrize(("items", "status"), [
    ([{**ITEM, "response": "x" * 61}, {"context": [], "response": "ok"}], 413),  # as reject: limits first
    ([{"context": [], "response": "ok"}], 422),
])
def test_skip_with_nothing_left_to_score_fails_as_reject_does(small_limits_client, items, status):
    response = small_limits_client.post("/score", json={"model": "length", "items": items, "on_invalid": "skip"})
    assert response.status_code == status
    assert response.get_json()["error"]["details"] == small_limits_client.post(
        "/score", json={"model": "length", "items": items}).get_json()["error"]["details"] | (
        {"items.1.context": "Shorter than minimum length 1."} if status == 413 else {})


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"items": [ITEM] * 7}, 413, "items"),                       # the number of items is the request's
    ({"items": [ITEM], "options": {"nope": 1}}, 422, "options"),  # options belong to every item
    ({"items": [ITEM], "on_invalid": "sometimes"}, 422, "on_invalid"),
])
def test_skip_does_not_cover_the_request_s_own_problems(small_limits_client, body, status, field):
    response = small_limits_client.post("/score", json={"model": "length", "on_invalid": "skip", **body})
    assert response.status_code == status
    assert any(key.startswith(field) for key in response.get_json()["error"]["details"]), response.get_json()


@pytest.mark.parametrize("wrong", [None, 5, "a string", ["a", "list"]])
def test_skip_leaves_out_an_item_that_is_not_an_object(small_limits_client, wrong):
    items = [ITEM, wrong, OTHER]
    rejected = small_limits_client.post("/score", json={"model": "length", "items": items})
    assert rejected.status_code == 422 and set(rejected.get_json()["error"]["details"]) == {"items.1"}
    body = small_limits_client.post("/score", json={"model": "length", "items": items, "on_invalid": "skip"}).get_json()
    alone = small_limits_client.post("/score", json={"model": "length", "items": [ITEM, OTHER]}).get_json()["scores"]
    assert body["scores"] == [alone[0], None, alone[1]] and body["skipped"] == [1]
    assert body["errors"] == rejected.get_json()["error"]["details"]


def test_without_skip_the_invalid_items_are_named_in_item_order(small_limits_client):
    items = [{**ITEM, "reference": "   "}, None, {**ITEM, "context": []}]
    details = small_limits_client.post("/score", json={"model": "bleu4", "items": items}).get_json()["error"]["details"]
    assert list(details) == ["items.0.reference", "items.1", "items.2.context"]


@pytest.mark.parametrize("wrong", [None, 5, ["a"], {"text": "a"}])
def test_rerank_skip_leaves_out_a_candidate_that_is_not_a_string(small_limits_client, wrong):
    body = {"model": "length", "context": ["hi"], "candidates": ["a b c", wrong, "one two"]}
    rejected = small_limits_client.post("/rerank", json=body)
    assert rejected.status_code == 422 and set(rejected.get_json()["error"]["details"]) == {"candidates.1"}
    ranked = small_limits_client.post("/rerank", json={**body, "on_invalid": "skip"}).get_json()
    assert [r["index"] for r in ranked["ranking"]] == [0, 2] and ranked["skipped"] == [1]
    assert ranked["errors"] == rejected.get_json()["error"]["details"]
    with_long = {**body, "candidates": [*body["candidates"], "z " * 40]}
    assert small_limits_client.post("/rerank", json=with_long).status_code == 413  # limits first, as documented
    both = small_limits_client.post("/rerank", json={**with_long, "on_invalid": "skip"}).get_json()
    assert both["skipped"] == [1, 3] and set(both["errors"]) == {"candidates.1", "candidates.3"}


@pytest.mark.parametrize(("candidates", "status"), [([None, 5], 422), ([None, "z " * 40], 413)])
def test_rerank_skip_with_no_candidate_left_fails_as_reject_would(small_limits_client, candidates, status):
    response = small_limits_client.post("/rerank", json={"model": "length", "context": ["hi"],
                                                         "candidates": candidates, "on_invalid": "skip"})
    assert response.status_code == status
    assert set(response.get_json()["error"]["details"]) == {"candidates.0", "candidates.1"}


def test_rerank_skip_leaves_over_long_candidates_out_of_the_ranking(small_limits_client):
    body = {"model": "length", "context": ["hi"], "candidates": ["a b c", "z " * 40, "a", "one two"]}
    assert small_limits_client.post("/rerank", json=body).status_code == 413
    ranked = small_limits_client.post("/rerank", json={**body, "on_invalid": "skip", "top_k": 2}).get_json()
    assert [r["index"] for r in ranked["ranking"]] == [0, 3]  # indices into the request's candidates
    assert ranked["skipped"] == [1] and set(ranked["errors"]) == {"candidates.1"}
    assert small_limits_client.post("/rerank", json={**body, "candidates": ["z " * 40], "on_invalid": "skip"}
                                    ).status_code == 413
    long_context = {**body, "context": ["c " * 40], "on_invalid": "skip"}  # every candidate's: not skippable
    assert small_limits_client.post("/rerank", json=long_context).status_code == 413


def test_rerank_skip_warns_and_excludes_by_the_request_index(small_limits_client):
    """A candidate left out shifts the scored batch: warnings and exclude_warned still name the request's index."""
    body = {"model": "length", "context": ["hi"], "candidates": [5, "", "ok then"], "on_invalid": "skip"}
    answer = small_limits_client.post("/rerank", json={**body, "exclude_warned": ["empty"]}).get_json()
    assert answer["skipped"] == [0] and [r["index"] for r in answer["ranking"]] == [2]
    assert [(w["index"], w["code"]) for w in answer["warnings"]] == [(1, "empty")]


def test_an_item_with_several_problems_is_skipped_once(small_limits_client):
    items = [{"context": 5, "response": 6}, OTHER]
    body = small_limits_client.post("/score", json={"model": "length", "items": items, "on_invalid": "skip"}).get_json()
    assert body["skipped"] == [0] and set(body["errors"]) == {"items.0.context", "items.0.response"}


def test_skipped_items_are_counted_in_metrics(small_limits_client):
    def skipped() -> float:
        return metric_sample(small_limits_client, 'dialscore_items_skipped_total{endpoint="/score"}')

    before = skipped()
    small_limits_client.post("/score", json={"model": "length", "items": _bad_items(), "on_invalid": "skip"})
    assert skipped() == before + 2  # length reads no reference: only items 1 and 2 are invalid for it


LONG_REFERENCE_ITEM = {"context": ["hey, what do you want to do tonight?"], "response": "nah.", "reference": "x" * 61}


def test_a_model_that_is_not_served_counts_as_reading_the_reference(small_limits_client):
    """service/api/dataplane.py `Requested.reads_reference`: a name not (yet) served counts as reading
    `reference`, so an over-long reference is refused by the size limit (413) before the model is
    looked up, alone or beside a reference-free model."""
    alone = small_limits_client.post("/score", json={"model": "adem", "items": [LONG_REFERENCE_ITEM]})
    assert alone.status_code == 413, alone.get_json()
    assert set(alone.get_json()["error"]["details"]) == {"items.0.reference"}
    beside = small_limits_client.post("/score", json={"models": ["length", "adem"], "items": [LONG_REFERENCE_ITEM]})
    assert beside.status_code == 413, beside.get_json()
    # length alone ignores the reference, so its size is not checked
    assert small_limits_client.post("/score", json={"model": "length", "items": [LONG_REFERENCE_ITEM]}).status_code == 200
