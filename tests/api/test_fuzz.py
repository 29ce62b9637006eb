"""Property-based: whatever a client sends, the answer is a contract status in the contract's format.

The table in test_errors.py pins the cases someone thought of; these generate the ones nobody did
(a field swapped for any JSON value, odd Unicode in every text field, every served model) and
hold the service to the two rules that matter: never a 5xx for bad input, and a 200 answers every
item with a finite score.
"""
from __future__ import annotations

import json
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.text import is_blank

CONTRACT_ERRORS = {400: "bad_json", 404: "unknown_model", 413: "too_large", 422: "invalid_request"}

ITEM = {"context": ["hi there"], "response": "hello", "reference": "hey"}
VALID = {
    "/score": {"model": "bleu4", "items": [ITEM], "options": {}},
    "/score several models": {"models": ["length", "bleu4"], "items": [ITEM, ITEM]},
    "/score dialogue": {"model": "mh", "items": [{"turns": [{"speaker": "user", "text": "hi"},
                                                            {"speaker": "bot", "text": "hello! how are you?"}]}],
                        "options": {"variant": "human-bot"}},
    "/score options": {"model": "ruber", "items": [ITEM], "options": {"blend": "max", "components": True}},
    "/score skipping invalid items": {"models": ["length", "bleu4"], "items": [ITEM, ITEM], "on_invalid": "skip"},
    "/rerank": {"model": "length", "context": ["hi there"], "candidates": ["hello", "hey you"], "top_k": 1},
    "/rerank skipping invalid candidates": {"model": "bleu4", "context": ["hi there"], "reference": "hey",
                                            "candidates": ["hello", "hey you"], "on_invalid": "skip"},
    "/correlate": {"human": [1.0, 2.0, 3.0, 4.0], "scores": {"m": [1.0, 3.0, 2.0, 4.0]},
                   "systems": ["a", "a", "b", "b"], "methods": ["pearson"], "resamples": 50, "seed": 0},
    "/human-eval": {"ratings": [{"rater": "w1", "system": "A", "item": "d1", "scores": {"fun": 70}},
                                {"rater": "w1", "system": "B", "item": "d2", "scores": {"fun": 20}}],
                    "scale": [0, 100], "alpha": 0.05},
}

# Text as clients really send it: any printable or control character, emoji, zero-width and
# combining marks; lone surrogates are excluded here because JSON encoding rejects them (the
# table in test_errors.py sends them as raw escapes).
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(10 ** 20), 10 ** 20)
    | st.floats(allow_nan=False, allow_infinity=False) | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12,
)


@pytest.fixture()
def full_client(full_app):
    return full_app.test_client()


def _paths(value, prefix=()):
    """Every place in a request a mutation can land: each key of each object, each list element."""
    yield prefix
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _paths(inner, prefix + (key,))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            yield from _paths(inner, prefix + (index,))


def _replace(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def _assert_contract(response) -> None:
    body = response.get_json()
    assert response.status_code < 500, response.get_data(as_text=True)[:500]
    if response.status_code == 200:
        return
    assert response.status_code in CONTRACT_ERRORS, response.status_code
    assert body["error"]["code"] == CONTRACT_ERRORS[response.status_code], body
    assert isinstance(body["error"]["message"], str) and body["error"]["message"]
    assert isinstance(body["error"]["details"], dict)


@pytest.mark.parametrize("path", sorted(VALID))
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_field_swapped_for_any_json_value_is_answered_in_contract(full_client, path, data) -> None:
    valid = VALID[path]
    where = data.draw(st.sampled_from(list(_paths(valid))), label="where")
    body = _replace(valid, where, data.draw(JSON_VALUES, label="new value"))
    _assert_contract(full_client.post(path.split()[0], data=json.dumps(body), content_type="application/json"))


@pytest.mark.parametrize("path", sorted(VALID))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_extra_or_missing_field_is_answered_in_contract(full_client, path, data) -> None:
    body = dict(VALID[path])
    if data.draw(st.booleans(), label="drop a field"):
        body.pop(data.draw(st.sampled_from(sorted(body)), label="dropped"))
    else:
        body[data.draw(TEXT, label="new key")] = data.draw(JSON_VALUES, label="its value")
    _assert_contract(full_client.post(path.split()[0], data=json.dumps(body), content_type="application/json"))


def _served(app) -> list[dict]:
    return app.test_client().get("/models").get_json()["models"]


def _valid_for(model: dict, item: dict) -> bool:
    """Whether the contract obliges a model to score a drawn item: reply items (at most 3 texts of 40
    characters, every field present) are, but a referenced model needs a reference that is not blank;
    a dialogue needs a bot turn that is not blank, and (M_H's default variant, which reads the user's turns)
    a user turn that is not blank. Blank is text.is_blank (tests/test_text.py): whitespace and invisible
    format characters, so a drawn soft hyphen is blank too."""
    if model["kind"] == "referenced":
        return not is_blank(item["reference"])
    if model["kind"] != "dialogue":
        return True
    return all(any(turn["speaker"] == speaker and not is_blank(turn["text"]) for turn in item["turns"])
               for speaker in ("bot", "user"))


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_served_model_scores_any_text_with_a_finite_score(full_app, data) -> None:
    client = full_app.test_client()
    texts = st.lists(TEXT, min_size=1, max_size=3)
    for model in _served(full_app):
        if model["kind"] == "dialogue":
            items = [{"turns": [{"speaker": speaker, "text": text}
                                for speaker, text in zip(("user", "bot") * 3, data.draw(texts, label="turns"))]}
                     for _ in range(2)]
        else:
            items = [{"context": data.draw(texts, label="context"), "response": data.draw(TEXT, label="response"),
                      "reference": data.draw(TEXT, label="reference")} for _ in range(2)]
        response = client.post("/score", json={"model": model["name"], "items": items})
        _assert_contract(response)
        if not all(_valid_for(model, item) for item in items):
            assert response.status_code == 422, (model["name"], response.get_json())
            continue
        # Every drawn item is valid: a model that refused (or 413'd) them all once passed unchecked.
        assert response.status_code == 200, (model["name"], response.get_json())
        scores = response.get_json()["scores"]
        assert len(scores) == len(items)
        assert all(isinstance(s, (int, float)) and math.isfinite(s) for s in scores), (model["name"], scores)


@pytest.mark.parametrize("path", sorted(VALID))
def test_the_bodies_the_fuzzing_starts_from_are_valid(full_client, path) -> None:
    """Otherwise every mutation above would only ever exercise the 422 path."""
    response = full_client.post(path.split()[0], json=VALID[path])
    assert response.status_code == 200, response.get_json()
