"""Bad input gets its contract status and error format, never a 500."""
import json

import pytest

ITEM = {"context": ["hi there, how are you?"], "response": "fine, thanks!", "reference": "good, and you?"}


def _score(**body):
    return json.dumps({"model": "bleu4", "items": [ITEM], **body}).encode()


CASES = [
    ("empty body", "/score", b"", 400, "bad_json", None),
    ("not json", "/score", b"{model: bleu4", 400, "bad_json", None),
    ("a json list", "/score", b"[1, 2]", 400, "bad_json", None),
    ("a json string", "/correlate", b'"hello"', 400, "bad_json", None),
    # Python refuses an integer of more than 4,300 digits with a bare ValueError: it was a 500
    ("a 5,000-digit integer", "/score", b'{"model": "bleu4", "items": [], "x": ' + b"1" * 5000 + b"}", 400,
     "bad_json", "x"),
    # an array is not the object every endpoint wants, however deep (was 413 past the parser's limit)
    ("a deep array body", "/score", b"[" * 50 + b"]" * 50, 400, "bad_json", None),
    ("an array body past the parser's limit", "/score", b"[" * 100_000 + b"]" * 100_000, 400, "bad_json", None),
    ("a 5,000-digit integer", "/human-eval", b'{"ratings": ' + b"9" * 5000 + b"}", 400, "bad_json", "ratings"),
    # a repeated key and a long number were refused naming no item: which of 500 was it?
    ("a key repeated in item 1", "/score", b'{"model": "bleu4", "items": [{"context": ["a"], "response": "x"}, '
     b'{"context": ["a"], "response": "x", "response": "y"}]}', 400, "bad_json", "items.1.response"),
    ("a 4,301-digit rating", "/correlate", b'{"human": [1, 2, 3, ' + b"1" * 4301 + b'], "scores": {"m": [1, 2, 3, 4]}}',
     400, "bad_json", "human.3"),
    ("unknown model", "/score", _score(model="no-such-model"), 404, "unknown_model", None),
    ("a null among an item's ratings", "/correlate", b'{"human": [[1, 2], [2, null], [3, 4], [4, 5]], "scores": '
     b'{"m": [1, 2, 3, 4]}}', 422, "invalid_request", "human.1.1"),
    ("unknown model among models", "/score",
     json.dumps({"models": ["bleu4", "no-such-model"], "items": [ITEM]}).encode(), 404, "unknown_model", "models.1"),
    ("unknown key", "/score", _score(colour="red"), 422, "invalid_request", "colour"),
    ("unknown item key", "/score", json.dumps({"model": "bleu4", "items": [{**ITEM, "x": 1}]}).encode(),
     422, "invalid_request", "items.0.x"),
    ("missing response", "/score", json.dumps({"model": "bleu4", "items": [ITEM, {"context": ["a"], "reference": "b"}]}).encode(),
     422, "invalid_request", "items.1.response"),
    ("context not a list", "/score", json.dumps({"model": "bleu4", "items": [{**ITEM, "context": "hi"}]}).encode(),
     422, "invalid_request", "items.0.context"),
    ("empty context", "/score", json.dumps({"model": "bleu4", "items": [{**ITEM, "context": []}]}).encode(),
     422, "invalid_request", "items.0.context"),
    ("empty items", "/score", json.dumps({"model": "bleu4", "items": []}).encode(), 422, "invalid_request", "items"),
    ("missing reference for referenced model", "/score",
     json.dumps({"model": "bleu4", "items": [{"context": ["a"], "response": "b"}]}).encode(),
     422, "invalid_request", "items.0.reference"),
    ("blank reference for referenced model", "/score",
     json.dumps({"model": "bleu4", "items": [ITEM, {**ITEM, "reference": " \t"}]}).encode(),
     422, "invalid_request", "items.1.reference"),
    ("control-character reference for referenced model", "/score",
     json.dumps({"model": "bleu4", "items": [ITEM, {**ITEM, "reference": "\u0000\u0007"}]}).encode(),
     422, "invalid_request", "items.1.reference"),
    ("invisible reference for referenced model", "/score",
     json.dumps({"model": "bleu4", "items": [ITEM, {**ITEM, "reference": "\u200b\ufeff \u2060"}]}).encode(),
     422, "invalid_request", "items.1.reference"),
    ("invisible reference for rerank", "/rerank",
     json.dumps({"model": "bleu4", "context": ["hi"], "candidates": ["a", "b"], "reference": "\u200d"}).encode(), 422,
     "invalid_request", "reference"),
    ("empty reference for rerank", "/rerank",
     json.dumps({"model": "bleu4", "context": ["hi"], "candidates": ["a", "b"], "reference": ""}).encode(), 422,
     "invalid_request", "reference"),
    ("model and models", "/score", _score(models=["length"]), 422, "invalid_request", "model"),
    ("unknown option", "/score", _score(options={"blend": "min"}), 422, "invalid_request", "options.blend"),
    ("too many items", "/score", json.dumps({"model": "bleu4", "items": [ITEM] * 513}).encode(), 413, "too_large", "items"),
    ("2 MiB body", "/score", json.dumps({"model": "bleu4", "items": [{**ITEM, "response": "x" * (2 << 20)}]}).encode(),
     413, "too_large", None),
    ("100,000-character utterance", "/score",
     json.dumps({"model": "bleu4", "items": [{**ITEM, "context": ["y" * 100_000]}]}).encode(), 413, "too_large",
     "items.0.context.0"),
    ("too many turns", "/score", json.dumps({"model": "bleu4", "items": [{**ITEM, "context": ["a"] * 51}]}).encode(),
     413, "too_large", "items.0.context"),
    ("too many candidates", "/rerank",
     json.dumps({"model": "length", "context": ["hi"], "candidates": ["a"] * 65}).encode(), 413, "too_large", "candidates"),
    ("rerank needs a reference", "/rerank",
     json.dumps({"model": "bleu4", "context": ["hi"], "candidates": ["a", "b"]}).encode(), 422, "invalid_request",
     "reference"),
    ("rerank top_k zero", "/rerank",
     json.dumps({"model": "length", "context": ["hi"], "candidates": ["a"], "top_k": 0}).encode(), 422,
     "invalid_request", "top_k"),
    # NaN and Infinity are not JSON (RFC 8259): 400 bad_json, naming where they stand; 1e999 is JSON
    # whose value overflows, which the schema refuses.
    ("NaN in correlate", "/correlate", b'{"human": [1, 2, NaN], "scores": {"m": [1, 2, 3]}}', 400, "bad_json",
     "human.2"),
    ("NaN in a metric", "/correlate", b'{"human": [1, 2, 3], "scores": {"m": [1, NaN, 3]}}', 400, "bad_json",
     "scores.m.1"),
    ("-Infinity as an option", "/score",
     b'{"model": "length", "items": [{"context": ["a"], "response": "b"}], "options": {"x": -Infinity}}', 400,
     "bad_json", "options.x"),
    ("Infinity as alpha", "/human-eval",
     b'{"ratings": [{"rater": "a", "system": "s", "item": "i", "scores": {"fun": 5}}], "alpha": Infinity}', 400,
     "bad_json", "alpha"),
    ("a body that is NaN", "/correlate", b'NaN', 400, "bad_json", "(body)"),
    ("an overflowing number in correlate", "/correlate", b'{"human": [1, 2, 1e999], "scores": {"m": [1, 2, 3]}}',
     422, "invalid_request", "human.2"),
    ("mismatched lengths", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2]}}).encode(), 422,
     "invalid_request", None),
    ("bad method", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                             "methods": ["magic"]}).encode(), 422, "invalid_request", "methods.0"),
    ("unknown system-level design", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                                              "system_resampling": "inputs"}).encode(), 422,
     "invalid_request", "system_resampling"),
    ("unknown item-level design", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                                            "item_resampling": "systems"}).encode(), 422,
     "invalid_request", "item_resampling"),
    ("inputs resampled at item level, none named", "/correlate",
     json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]}, "item_resampling": "inputs"}).encode(), 422,
     "invalid_request", "inputs"),
    ("inputs of another length", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                                           "inputs": ["a", "b"]}).encode(), 422,
     "invalid_request", "inputs"),
    ("a blank system label, as a CSV's blank system cell", "/correlate",
     json.dumps({"human": [1, 2, 3, 4], "scores": {"m": [1, 2, 3, 4]}, "systems": ["a", "b", "", "a"]}).encode(),
     422, "invalid_request", "systems.2"),
    ("a system label of spaces", "/correlate",
     json.dumps({"human": [1, 2, 3, 4], "scores": {"m": [1, 2, 3, 4]}, "systems": ["a", " ", "b", "a"]}).encode(),
     422, "invalid_request", "systems.1"),
    ("too many resamples", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                                     "resamples": 10 ** 7}).encode(), 413, "too_large", "resamples"),
    ("human-eval bad scale", "/human-eval", json.dumps({"ratings": [{"rater": "a", "system": "s", "item": "i",
                                                                     "scores": {"fun": 5}}], "scale": [100, 0]}).encode(),
     422, "invalid_request", "scale"),
    # Found by a black-box audit of a running service: each of these was a 500 or a silent guess.
    ("lone surrogate in a reply", "/score",
     b'{"model": "bleu4", "items": [{"context": ["hi"], "response": "x \\ud800 y", "reference": "ok"}]}',
     400, "bad_json", "items.0.response"),
    ("lone surrogate in a model name", "/score", b'{"model": "\\udc00", "items": [{"context": ["a"], "response": "b"}]}',
     400, "bad_json", "model"),
    ("lone surrogate in a key", "/correlate", b'{"human": [1, 2, 3], "scores": {"\\ud83d": [1, 2, 3]}}',
     400, "bad_json", "scores.\\ud83d"),  # the key named escaped: a lone surrogate is no text to send back
    # Nesting is a limit GET /models lists (max_json_depth), so over it is 413 as over any limit.
    ("nested past the parser's recursion limit", "/correlate", b'{"human": ' + b"[" * 5000 + b"]" * 5000 + b"}",
     413, "too_large", "max_json_depth"),
    ("nested past max_json_depth", "/score", b'{"model": "bleu4", "items": ' + b"[" * 40 + b"]" * 40 + b"}",
     413, "too_large", "max_json_depth"),
    ("a repeated key: which model did the client mean?", "/score",
     b'{"model": "bleu4", "model": "length", "items": [{"context": ["a"], "response": "b", "reference": "c"}]}',
     400, "bad_json", "key"),
    ("a repeated key inside an item", "/score",
     b'{"model": "length", "items": [{"context": ["a"], "response": "b", "response": "c d"}]}', 400, "bad_json", "key"),
    ("a metric given twice", "/correlate", b'{"human": [1, 2, 3], "scores": {"m": [1, 2, 3], "m": [3, 2, 1]}}',
     400, "bad_json", "key"),
    ("top_k as a string", "/rerank",
     json.dumps({"model": "length", "context": ["hi"], "candidates": ["a", "b"], "top_k": "2"}).encode(), 422,
     "invalid_request", "top_k"),
    ("top_k a fraction", "/rerank",
     json.dumps({"model": "length", "context": ["hi"], "candidates": ["a", "b"], "top_k": 1.5}).encode(), 422,
     "invalid_request", "top_k"),
    ("human scores as strings", "/correlate", json.dumps({"human": ["1", "2", "3"], "scores": {"m": [1, 2, 3]}}).encode(),
     422, "invalid_request", "human.0"),
    ("metric scores as strings", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": ["1", 2, 3]}}).encode(),
     422, "invalid_request", "scores.m.0"),
    ("confidence as a string", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                                         "confidence": "0.9"}).encode(), 422, "invalid_request",
     "confidence"),
    ("resamples a fraction", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]},
                                                       "resamples": 10.5}).encode(), 422, "invalid_request", "resamples"),
    ("negative seed", "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 2, 3]}, "seed": -1}).encode(),
     422, "invalid_request", "seed"),
    ("items x resamples over the bootstrap budget", "/correlate",
     json.dumps({"human": list(range(5000)), "scores": {"m": list(range(5000))}, "resamples": 5000}).encode(),
     413, "too_large", "resamples"),
    ("more metrics than the limit: comparisons grow with their square", "/correlate",
     json.dumps({"human": [1, 2, 3], "scores": {f"m{i}": [1, 2, 3] for i in range(33)}}).encode(),
     413, "too_large", "scores"),
    ("items x resamples x metrics over the time budget", "/correlate",
     json.dumps({"human": list(range(4000)), "scores": {f"m{i}": list(range(4000)) for i in range(4)},
                 "resamples": 5000}).encode(), 413, "too_large", "resamples"),
    ("a finite number too large for the statistics", "/correlate",
     json.dumps({"human": [[1.7e308, 1.7e308], [1.6e308], [1.5e308], [1]], "scores": {"m": [1, 2, 3, 4]}}).encode(),
     422, "invalid_request", "human.0.0"),
    ("more systems than the limit: pairwise tests grow with their square", "/human-eval",
     json.dumps({"ratings": [{"rater": "a", "system": f"s{i}", "item": "i", "scores": {"fun": 5}}
                             for i in range(65)]}).encode(), 413, "too_large", "ratings"),
    ("human-eval scale too large for the statistics", "/human-eval",
     json.dumps({"ratings": [{"rater": "a", "system": "s", "item": "i", "scores": {"fun": 1.7e308}}],
                 "scale": [0, 1.79e308]}).encode(), 422, "invalid_request", "scale.1"),
    ("human-eval score as a string", "/human-eval", json.dumps({"ratings": [{"rater": "a", "system": "s", "item": "i",
                                                                            "scores": {"fun": "5"}}]}).encode(),
     422, "invalid_request", "ratings.0.scores.fun"),
    ("human-eval scale as strings", "/human-eval", json.dumps({"ratings": [{"rater": "a", "system": "s", "item": "i",
                                                                           "scores": {"fun": 5}}],
                                                              "scale": ["0", "100"]}).encode(),
     422, "invalid_request", "scale.0"),
    ("human-eval alpha as a string", "/human-eval", json.dumps({"ratings": [{"rater": "a", "system": "s", "item": "i",
                                                                            "scores": {"fun": 5}}],
                                                               "alpha": "0.05"}).encode(),
     422, "invalid_request", "alpha"),
    ("human-eval missing rater", "/human-eval", json.dumps({"ratings": [{"system": "s", "item": "i",
                                                                        "scores": {"fun": 5}}]}).encode(),
     422, "invalid_request", "ratings.0.rater"),
    # Each of these was once a 500.
    ("a UTF-16 body carrying a lone surrogate", "/score",
     '{"model": "length", "items": [{"context": ["a"], "response": "\\ud800"}]}'.encode("utf-16-le"),
     400, "bad_json", None),
    ("a UTF-32 body", "/score", '{"model": "length", "items": []}'.encode("utf-32"), 400, "bad_json", None),
    ("a criterion named like the mean over criteria", "/human-eval",
     json.dumps({"ratings": [{"rater": "w", "system": "A", "item": "a", "scores": {"overall": 10, "fun": 20}}]}).encode(),
     422, "invalid_request", "ratings.0.scores.overall"),
]


@pytest.mark.parametrize("name, path, body, status, code, field", CASES, ids=[c[0] for c in CASES])
def test_bad_input(client, name, path, body, status, code, field):
    response = client.post(path, data=body, content_type="application/json")
    assert response.status_code == status, response.get_data(as_text=True)[:500]
    error = response.get_json()["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["details"], dict)
    if field is not None:
        assert field in error["details"], error["details"]


def test_dialogue_items_for_a_reply_model_are_422(client):
    body = {"model": "length", "items": [{"turns": [{"speaker": "bot", "text": "hi"}]}]}
    response = client.post("/score", json=body)
    assert response.status_code == 422
    assert "items.0.turns" in response.get_json()["error"]["details"]


def test_rerank_with_a_referenced_model_and_no_reference_names_the_models_that_need_none(client):
    response = client.post("/rerank", json={"model": "bleu4", "context": ["hi"], "candidates": ["a", "b"]})
    error = response.get_json()["error"]
    assert response.status_code == 422 and error["code"] == "invalid_request"
    assert error["message"] == "bleu4 needs a reference. Models that need no reference: length."


def test_many_field_errors_make_one_short_message_and_every_one_is_in_details(client):
    ratings = [{"rater": "w", "system": "A", "item": f"i{i}", "scores": {"a": 500}} for i in range(300)]
    response = client.post("/human-eval", json={"ratings": ratings})
    assert response.status_code == 422
    error = response.get_json()["error"]
    assert error["message"] == ("300 fields are invalid (see details); the first, ratings.0.scores.a: "
                                + error["details"]["ratings.0.scores.a"])
    assert len(error["details"]) == 101 and "200 more" in error["details"]["more"]
    one = client.post("/correlate", json={"human": [1, 2, 3], "scores": {"m": [1, 2]}}).get_json()["error"]
    [(path, text)] = one["details"].items()
    assert one["message"] == f"{path}: {text}"


def test_method_not_allowed_has_allow_header(client):
    response = client.get("/score")
    assert response.status_code == 405
    assert "POST" in response.headers["Allow"]
    assert response.get_json()["error"]["code"] == "method_not_allowed"


def test_a_405_lists_the_allowed_methods_in_one_order_in_every_process(client):
    """werkzeug gives them as a set's list, whose order follows each process's string hashing: two
    workers of one pod answered `use POST, OPTIONS` and `use OPTIONS, POST` to the same request."""
    from werkzeug.exceptions import MethodNotAllowed

    with client.application.test_request_context("/score", method="GET"):
        response = client.application.handle_user_exception(MethodNotAllowed(["POST", "OPTIONS"]))
    assert response.headers["Allow"] == "OPTIONS, POST"
    assert response.get_json()["error"]["details"]["allowed"] == ["OPTIONS", "POST"]


def test_field_errors_are_listed_in_one_order_whatever_order_marshmallow_gives():
    from service.api.schemas import flatten_messages

    one = {"model": ["Unknown field."], "items": {10: {"response": ["Bad."]}, 2: {"context": ["Bad."]}}}
    other = {"items": {2: {"context": ["Bad."]}, 10: {"response": ["Bad."]}}, "model": ["Unknown field."]}
    assert list(flatten_messages(one).items()) == list(flatten_messages(other).items()) == [
        ("items.2.context", "Bad."), ("items.10.response", "Bad."), ("model", "Unknown field.")]


def test_options_lists_the_allowed_methods_in_one_order_in_every_process(client, monkeypatch):
    from werkzeug.routing import MapAdapter

    monkeypatch.setattr(MapAdapter, "allowed_methods", lambda self, method=None: ["POST", "OPTIONS"])  # a set's order
    assert client.options("/score").headers["Allow"] == "OPTIONS, POST"


def test_options_answers_the_allowed_methods_with_no_body(client):
    # Flask's own answer was a 200 with an empty text/html body; every body here is JSON, so none.
    response = client.options("/score")
    assert response.status_code == 204 and response.data == b""
    assert "Content-Type" not in response.headers
    assert set(response.headers["Allow"].split(", ")) >= {"POST", "OPTIONS"}


def test_unknown_path_is_404_in_contract_format(client):
    response = client.get("/nowhere")
    assert response.status_code == 404
    assert response.get_json()["error"]["code"] == "not_found"


def test_limits_are_configuration(baseline_store):
    from service.app import create_app

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"], "max_items": 2,
                      "max_chars": 5})
    client = app.test_client()
    items = [{"context": ["hi"], "response": "ok"}] * 3
    assert client.post("/score", json={"model": "length", "items": items}).status_code == 413
    assert client.post("/score", json={"model": "length", "items": items[:2]}).status_code == 200
    long = [{"context": ["hi"], "response": "too long"}]
    assert client.post("/score", json={"model": "length", "items": long}).status_code == 413
    assert client.get("/models").get_json()["limits"]["max_items"] == 2


def test_reference_limit_applies_only_to_models_that_read_it(baseline_store):
    from service.app import create_app

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length", "bleu4"],
                      "max_chars": 20})
    client = app.test_client()
    item = {"context": ["hi"], "response": "ok", "reference": "r" * 50}
    assert client.post("/score", json={"model": "length", "items": [item]}).status_code == 200  # ignored by length
    assert client.post("/rerank", json={"model": "length", "context": ["hi"], "candidates": ["a"],
                                        "reference": "r" * 50}).status_code == 200
    over = client.post("/score", json={"models": ["length", "bleu4"], "items": [item]})
    assert over.status_code == 413 and "items.0.reference" in over.get_json()["error"]["details"]


def test_human_eval_criteria_are_limited(baseline_store):
    """A 200 KB body of 10,000 criteria and a 40,000-entry `reverse` took 12 s."""
    from service.app import create_app

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"], "max_criteria": 3})
    client = app.test_client()
    ratings = [{"rater": f"w{r}", "system": s, "item": f"{r}{s}{i}", "scores": {"a": 50 + i, "b": 40, "c": 30}}
               for r in range(3) for s in "AB" for i in range(2)]
    assert client.post("/human-eval", json={"ratings": ratings, "reverse": ["c"]}).status_code == 200
    wide = [{**rating, "scores": {**rating["scores"], "d": 1}} for rating in ratings]
    over = client.post("/human-eval", json={"ratings": wide})
    assert over.status_code == 413 and "ratings.0.scores" in over.get_json()["error"]["details"]
    over = client.post("/human-eval", json={"ratings": ratings, "reverse": ["x"] * 4})
    assert over.status_code == 413 and "reverse" in over.get_json()["error"]["details"]
    assert client.get("/models").get_json()["limits"]["max_criteria"] == 3


def test_not_ready_is_503(baseline_store):
    from service.app import create_app
    from service.store.model_store import ModelStore

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"]})
    app.extensions["dialscore.store"] = ModelStore(baseline_store)  # a store that has not loaded yet
    client = app.test_client()
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.get_json()["error"]["code"] == "not_ready"
    scored = client.post("/score", json={"model": "length", "items": [{"context": ["a"], "response": "b"}]})
    assert scored.status_code == 503


def test_a_503_while_loading_says_when_to_retry(baseline_store):
    """Waiting helps while the models load: /readyz, /score and /rerank say how long (`Retry-After`, seconds)."""
    from service.app import create_app
    from service.store.model_store import ModelStore

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"]})
    app.extensions["dialscore.store"] = ModelStore(baseline_store)  # a store that has not loaded yet
    client = app.test_client()
    answers = [client.get("/readyz"),
               client.post("/score", json={"model": "length", "items": [{"context": ["a"], "response": "b"}]}),
               client.post("/rerank", json={"model": "length", "context": ["a"], "candidates": ["b", "c"]})]
    for answer in answers:
        assert answer.status_code == 503 and answer.get_json()["error"]["details"]["loading"] is True
        assert int(answer.headers["Retry-After"]) >= 1
    assert client.get("/healthz").headers.get("Retry-After") is None


def _chunked(app, path: str, data: bytes) -> tuple[str, dict]:
    """A request with Transfer-Encoding: chunked as gunicorn hands it over: no Content-Length."""
    import io

    from werkzeug.test import EnvironBuilder

    environ = EnvironBuilder(path=path, method="POST", input_stream=io.BytesIO(data),
                             content_type="application/json").get_environ()
    environ.pop("CONTENT_LENGTH", None)
    environ.update({"wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"})
    status: list[str] = []
    body = b"".join(app(environ, lambda s, headers: status.append(s)))
    return status[0], json.loads(body)


def test_chunked_body_over_the_limit_is_413_not_a_truncated_parse(baseline_app):
    big = json.dumps({"human": list(range(200_000)), "scores": {"m": list(range(200_000))}}).encode()
    status, body = _chunked(baseline_app, "/correlate", big)
    assert status.startswith("413") and body["error"]["code"] == "too_large", body
    status, body = _chunked(baseline_app, "/correlate", json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 3, 2]}}
                                                                    ).encode())
    assert status.startswith("200"), body


def test_a_chunked_body_of_exactly_the_limit_is_read_and_a_malformed_one_is_400(baseline_app):
    limit = baseline_app.config["SETTINGS"].max_body_bytes
    body = json.dumps({"human": [1, 2, 3], "scores": {"m": [1, 3, 2]}}).encode()
    status, _ = _chunked(baseline_app, "/correlate", body + b" " * (limit - len(body)))
    assert status.startswith("200")
    status, reply = _chunked(baseline_app, "/correlate", body + b" " * (limit - len(body) + 1))
    assert status.startswith("413"), reply

    class BrokenChunks:  # what gunicorn's reader raises on a chunk size that is not hex
        def read(self, *args):
            raise ValueError("Invalid chunk size: 'zz'")

        readline = read

    from werkzeug.test import EnvironBuilder

    environ = EnvironBuilder(path="/score", method="POST", content_type="application/json").get_environ()
    environ.pop("CONTENT_LENGTH", None)
    environ.update({"wsgi.input": BrokenChunks(), "wsgi.input_terminated": True, "HTTP_TRANSFER_ENCODING": "chunked"})
    statuses: list[str] = []
    reply = json.loads(b"".join(baseline_app(environ, lambda s, headers: statuses.append(s))))
    assert statuses[0].startswith("400") and reply["error"]["code"] == "bad_json", reply


def test_human_eval_with_a_tiny_alpha_gives_the_same_95_percent_intervals_not_500(client):
    """alpha is the raters' pass threshold only: 1e-17 (1 - alpha rounds to 1.0) leaves the intervals as they are."""
    ratings = [{"rater": "w", "system": s, "item": f"{s}{i}", "scores": {"x": v + i}}
               for s, v in (("A", 1), ("B", 9)) for i in range(3)]
    response = client.post("/human-eval", json={"ratings": ratings, "alpha": 1e-17})
    assert response.status_code == 200, response.get_json()
    default = client.post("/human-eval", json={"ratings": ratings}).get_json()
    intervals = [s["overall_z_ci"] for s in response.get_json()["systems"]]
    assert None not in intervals and intervals == [s["overall_z_ci"] for s in default["systems"]]


def _break_missing_folder(store):
    return "nonexistent", "model folder missing", "no folder"


def _break_manifest(store):
    manifest = json.loads((store / "length" / "manifest.json").read_text())
    del manifest["version"]
    (store / "length" / "manifest.json").write_text(json.dumps(manifest))
    return "length", "manifest invalid: version", "lacks 'version'"


def _break_hash(store):
    with open(store / "glove-50d" / "vocab.json", "ab") as handle:
        handle.write(b" ")
    return "glove-50d", "hash mismatch in vocab.json", "vocab.json has sha256"


def _break_file(store):
    (store / "glove-50d" / "vectors.npy").unlink()
    return "glove-50d", "file missing: vectors.npy", "vectors.npy is missing"


@pytest.mark.parametrize("breakage", [_break_missing_folder, _break_manifest, _break_hash, _break_file],
                         ids=["missing folder", "invalid manifest", "hash mismatch", "missing file"])
def test_a_model_that_failed_to_load_is_named_without_server_paths(tmp_path, caplog, breakage):
    """Clients (and /readyz, which is open even with a token) get a short reason; the log the full one."""
    from service.app import create_app
    from tests.conftest import copy_store

    store = copy_store(tmp_path / "store", ("length", "emb-average"))
    failed, reason, logged = breakage(store)
    client = create_app({"model_store": store, "load_sync": True,
                         "models": ["length", "emb-average", "nonexistent"]}).test_client()
    for name in ("nonexistent", failed):
        expected = reason if name == failed else "model folder missing"
        if name == "glove-50d":  # a component: the model that uses it is the one clients ask for
            name, expected = "emb-average", "component not loaded: glove-50d"
        response = client.post("/score", json={"model": name, "items": [{"context": ["a"], "response": "b",
                                                                         "reference": "c"}]})
        error = response.get_json()["error"]  # 503: a configured model the server could not load is its fault
        assert response.status_code == 503 and error["code"] == "not_ready" and error["details"]["reason"] == expected
        assert "Retry-After" not in response.headers  # waiting will not load it
        assert str(tmp_path) not in response.get_data(as_text=True)
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.get_json()["error"]["details"]["failed"][failed] == reason
    assert "Retry-After" not in ready.headers
    assert str(tmp_path) not in ready.get_data(as_text=True) and "sha256" not in ready.get_data(as_text=True)
    listed = client.get("/models")
    assert listed.get_json()["failed"][failed] == reason and str(tmp_path) not in listed.get_data(as_text=True)
    assert logged in caplog.text and str(tmp_path) in caplog.text


def test_load_errors_of_unknown_shape_are_not_shown_to_clients(tmp_path):
    from service.artifacts.runtime import Runtime
    from service.store.model_store import ModelStore, _public
    from tests.conftest import copy_store

    reason = _public(RuntimeError("[ONNXRuntimeError] : 3 : NO_SUCHFILE : Load model from "
                                  "/srv/models/adem/scorer.onnx failed"))
    assert "/" not in reason and "RuntimeError" in reason and "log" in reason
    store = copy_store(tmp_path / "store", ("length",))
    manifest = json.loads((store / "length" / "manifest.json").read_text())
    manifest["uses"] = ["../../etc"]  # a component name that is not a plain name is not echoed
    (store / "length" / "manifest.json").write_text(json.dumps(manifest))
    loaded = ModelStore(store, Runtime())
    loaded.load()
    assert loaded.public_failures["length"] == "failed to load; see the service log"


def test_a_non_finite_number_in_a_response_is_a_logged_500_not_invalid_json(client, monkeypatch, caplog):
    """Scores are finite floats (API.md); a NaN that slips through must not go out as `NaN`, which
    is not JSON and which clients' parsers reject or, worse, accept."""
    from service.api import dataplane as handlers

    monkeypatch.setattr(handlers, "score", lambda store, body, settings, *_: {"model": "length", "version": "x",
                                                                             "scores": [float("nan")]})
    response = client.post("/score", json={"model": "length", "items": [{"context": ["a"], "response": "b"}]})
    assert response.status_code == 500, response.get_data(as_text=True)
    error = json.loads(response.get_data(as_text=True))["error"]  # strict: json.loads would take NaN
    assert error["code"] == "internal" and error["details"] == {"type": "ValueError"}
    assert "internal error on POST /score" in caplog.text


def test_a_non_finite_number_returned_as_a_dict_is_a_500_in_the_contract_format(baseline_store, caplog):
    """A view that returns a dict is serialised after Flask's user error handlers have run: the
    failure reaches them as an InternalServerError, which must still read `internal`."""
    from service.app import create_app

    app = create_app({"model_store": baseline_store, "load_sync": True, "models": ["length"]})
    app.add_url_rule("/nan", "nan", lambda: {"value": float("inf")})
    response = app.test_client().get("/nan")
    assert response.status_code == 500, response.get_data(as_text=True)
    error = json.loads(response.get_data(as_text=True))["error"]
    assert error["code"] == "internal" and error["details"] == {"type": "ValueError"}
    assert "ValueError" in caplog.text


def test_errors_do_not_amplify_what_the_client_sent(client):
    """90,000 unknown keys were answered with a 2.3 MB error and a 100 KB model name echoed whole."""
    body = {"model": "length", "items": [{"context": ["a"], "response": "b"}], **{f"k{i}": 1 for i in range(5000)}}
    response = client.post("/score", json=body)
    error = response.get_json()["error"]
    assert response.status_code == 422 and len(error["details"]) == 101 and "4900 more" in error["details"]["more"]
    name = "m" * 100_000
    response = client.post("/score", json={"model": name, "items": [{"context": ["a"], "response": "b"}]})
    assert response.status_code == 404 and len(response.get_data()) < 5_000


def test_a_compressed_body_is_refused_with_a_reason(client):
    import gzip

    raw = gzip.compress(json.dumps({"model": "length", "items": [{"context": ["a"], "response": "b"}]}).encode())
    response = client.post("/score", data=raw, headers={"Content-Type": "application/json",
                                                        "Content-Encoding": "gzip"})
    error = response.get_json()["error"]
    assert response.status_code == 400 and "Content-Encoding" in error["message"] and "NUL" not in error["message"]


# --- open intervals: a bound is a schema violation, named beside the request's other ones ------------
# (stats/correlate.py and human_eval.py check the same ranges again, but only once the schema passed,
# so a request with a second problem must learn of both from the schema: "details" names every one.)
def test_confidence_of_one_is_named_with_the_other_schema_errors(client):
    """`confidence` is in (0, 1), open at 1."""
    body = {"human": [1, 2, 3, 4], "scores": {"m": [1, 3, 2, 4]}, "resamples": 0}
    assert client.post("/correlate", json={**body, "confidence": 0.99}).status_code == 200
    refused = client.post("/correlate", json={**body, "confidence": 1.0, "seed": -1})
    assert refused.status_code == 422
    assert {"confidence", "seed"} <= set(refused.get_json()["error"]["details"])


def test_human_eval_alpha_of_zero_is_named_with_the_other_schema_errors(client):
    """`alpha` is in (0, 1), open at 0."""
    rating = {"rater": "a", "system": "s", "item": "i", "scores": {"fun": 5}}
    refused = client.post("/human-eval", json={"ratings": [rating], "alpha": 0, "qc_system": 5})
    assert refused.status_code == 422
    assert {"alpha", "qc_system"} <= set(refused.get_json()["error"]["details"])


def test_a_repeated_key_says_where_in_the_message(client):
    body = (b'{"model": "bleu4", "items": [{"context": ["a"], "response": "x"}, '
            b'{"context": ["a"], "response": "x", "response": "y"}]}')
    error = client.post("/score", data=body, content_type="application/json").get_json()["error"]
    assert "ambiguous at items.1.response" in error["message"]


def test_an_unknown_model_after_a_repeated_one_is_named_by_its_place_as_sent(client):
    body = {"models": ["bleu4", "bleu4", "no-such-model"],
            "items": [{"context": ["a"], "response": "x", "reference": "y"}]}
    answer = client.post("/score", json=body)
    assert answer.status_code == 404 and "models.2" in answer.get_json()["error"]["details"], answer.get_json()
