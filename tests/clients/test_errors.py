"""Every failure is a DialscoreError carrying the contract's status, code, message and details, typed by code."""
from __future__ import annotations

import math
import pickle

import pytest
import requests
from dialscore_client import (Client, DialscoreError, InvalidRequest, NotFound, ServerError, TooLarge,
                              Unauthorized, UnknownModel)
from dialscore_client.errors import error_from_response

from tests.clients.conftest import TOKEN
from tests.clients.fixed_server import answering
from tests.clients.proxy import proxy
from tests.live_server import free_port

ITEM = {"context": ["how was your weekend?"], "response": "great, i went hiking!", "reference": "fine."}


@pytest.fixture()
def client(server):
    with Client(server.url, retry_deadline=0) as made:
        yield made


def test_invalid_request_carries_the_field_paths(client):
    with pytest.raises(InvalidRequest) as caught:
        client.score("adem", [ITEM, {"context": ["hello"], "response": "hi"}])
    error = caught.value
    assert (error.status, error.code) == (422, "invalid_request")
    assert error.details == {"items.1.reference": "Required, and not blank, by adem (a referenced model)."}
    assert str(error).startswith("invalid_request (HTTP 422): ")
    copy = pickle.loads(pickle.dumps(error))
    assert (type(copy), copy.status, copy.code, copy.details) == (InvalidRequest, 422, error.code, error.details)


def test_unknown_model(client):
    with pytest.raises(UnknownModel) as caught:
        client.rerank("no-such-model", ["hi"], ["hello"])
    assert (caught.value.status, caught.value.code) == (404, "unknown_model")
    assert caught.value.details["model"] == "no-such-model" and "adem" in caught.value.details["served"]
    assert isinstance(caught.value, NotFound) and isinstance(caught.value, DialscoreError)


def test_a_wrong_base_path_is_not_found(server):
    with pytest.raises(NotFound) as caught:
        Client(server.url + "/v1", retry_deadline=0).models()
    assert (caught.value.status, caught.value.code) == (404, "not_found")


def test_an_utterance_over_the_limit_is_too_large(client):
    with pytest.raises(TooLarge) as caught:
        client.score("length", [ITEM, {**ITEM, "response": "word " * 2001}])
    assert (caught.value.status, caught.value.code) == (413, "too_large")
    assert caught.value.details == {"items.1.response": "10005 characters; the limit is 10000."}
    skipped = client.score("length", [ITEM, {**ITEM, "response": "word " * 2001}], on_invalid="skip")
    assert skipped.scores == [4.0, None] and skipped.errors == caught.value.details


@pytest.mark.parametrize("call, field", [
    (lambda c: c.rerank("unref-minilm", "how was your weekend?", ["great, i went hiking"]), "context"),
    (lambda c: c.rerank("unref-minilm", ["how was your weekend?"], "great, i went hiking"), "candidates"),
    (lambda c: c.score("length", ITEM), "items"),
    (lambda c: c.score("length", None), "items"),
])
def test_a_string_or_a_mapping_for_a_list_is_refused_before_sending(call, field):
    """A string was split into its characters: 20 one-letter candidates ranked, or a context of 21 turns cut
    to its last 5, where the server refuses a string with 422."""
    with Client("http://127.0.0.1:9", retry_deadline=0) as unreachable:  # nothing is sent
        with pytest.raises(InvalidRequest) as caught:
            call(unreachable)
    assert caught.value.status is None and caught.value.details == {field: "Not a valid list."}


def test_nan_is_refused_before_sending(client):
    with pytest.raises(InvalidRequest) as caught:
        client.correlate([1.0, 2.0, 3.0], {"m": [1.0, math.nan, 2.0]})
    assert caught.value.status is None and caught.value.code == "invalid_request"


UNSENDABLE = [
    (lambda c: c.rerank("unref-minilm", ["hi"], ["ok", "ok \ud83d", "fine"]), "candidates.1",
     "surrogate '\\ud83d' at character 3"),
    (lambda c: c.rerank("unref-minilm", ["hi", "x \udc00"], ["ok"]), "context.1", "surrogate"),
    (lambda c: c.score("length", [ITEM] * 9 + [{"context": ["hi"], "response": math.nan}]), "items.9.response",
     "Out of range float"),
    (lambda c: c.score("length", [{"context": ["hi"], "response": b"x"}]), "items.0.response", "bytes"),
    (lambda c: c.score("length", [ITEM], options={"blend": math.inf}), "options.blend", "Out of range float"),
    (lambda c: c.correlate([1.0, 2.0], {"m": [1.0, math.nan]}), "scores.m.1", "Out of range float"),
    (lambda c: c.human_eval([{"rater": "r", "system": "s", "item": "i", "scores": {"fun": {1, 2}}}]),
     "ratings.0.scores.fun", "set"),
]


@pytest.mark.parametrize(("call", "path", "reason"), UNSENDABLE, ids=[path for _, path, _ in UNSENDABLE])
def test_what_json_cannot_carry_is_refused_before_sending(call, path, reason):
    """A lone surrogate, NaN or infinity, bytes or a set: a typed error naming the field by the caller's
    indices, and no request (not even the limits' look-up)."""
    with proxy(free_port()) as hop, Client(hop.url, retry_deadline=0) as client:
        with pytest.raises(InvalidRequest) as caught:
            call(client)
    assert hop.exchanges == []
    error = caught.value
    assert (error.status, error.code, list(error.details)) == (None, "invalid_request", [path])
    assert reason in error.details[path] and path in error.message


def test_a_token_is_sent_as_a_bearer_token(small_server):
    for token in (None, "wrong-token"):
        with pytest.raises(Unauthorized) as caught:
            Client(small_server.url, token=token, retry_deadline=0).score("length", [ITEM])
        assert (caught.value.status, caught.value.code) == (401, "unauthorized")
    assert Client(small_server.url, token=TOKEN, retry_deadline=0).score("length", [ITEM]).scores == [4.0]


def test_a_token_read_from_a_secret_file_is_stripped_and_one_no_header_can_carry_is_refused_unechoed(small_server):
    """`open(secret).read()` ends in a newline: it failed the first call as a `request_error` whose message held
    the token; a non-latin-1 one raised a bare UnicodeEncodeError, no DialscoreError."""
    assert Client(small_server.url, token=f" {TOKEN}\n", retry_deadline=0).score("length", [ITEM]).scores == [4.0]
    for token, said in (("s3c ret", "SPACE"), ("s\u20acret", "EURO SIGN"), ("tab\there", "control")):
        with pytest.raises(ValueError, match="token") as caught:
            Client(small_server.url, token=token)
        assert said in str(caught.value) and token not in str(caught.value)
    with pytest.raises(ValueError, match="token is blank"):
        Client(small_server.url, token=" \n")
    with pytest.raises(TypeError, match="token must be a str"):
        Client(small_server.url, token=b"bytes")  # type: ignore[arg-type]
    # a numeric token (from YAML) was sent as its digits before the check: still
    from dialscore_client import transport

    assert transport.checked_token(123456) == "123456"  # type: ignore[arg-type]


def test_a_proxys_html_error_is_still_a_typed_error():
    with proxy(free_port()) as hop:  # nothing listens upstream: the proxy answers its own 502 page
        with pytest.raises(ServerError) as caught:
            Client(hop.url, retry_deadline=0).models()
    error = caught.value
    assert (error.status, error.code, error.attempts) == (502, "http_502", 1)
    assert "502 Bad Gateway" in error.details["body"]
    assert "without the service's JSON error body" in error.message


SERVED_NONE = {"models": [], "limits": {}}
NOT_THE_SHAPE = [
    ({"/models": {"hello": 1}}, lambda c: c.models()),
    ({"/models": {"models": [{"name": "length"}], "limits": {}}}, lambda c: c.models()),
    ({"/models": SERVED_NONE, "/score": {"hello": 1}}, lambda c: c.score("length", [ITEM])),
    ({"/models": SERVED_NONE, "/score": {"model": "length", "version": "1", "scores": 3}},
     lambda c: c.score("length", [ITEM])),
    ({"/models": SERVED_NONE, "/score": {"results": {}}}, lambda c: c.score(["length", "adem"], [ITEM])),
    ({"/models": SERVED_NONE, "/rerank": {"hello": 1}}, lambda c: c.rerank("length", ["hi"], ["ok", "fine"])),
    ({"/models": SERVED_NONE, "/rerank": [1, 2]}, lambda c: c.rerank("length", ["hi"], ["ok", "fine"])),
    ({"/models": {"models": [], "limits": {"max_items": "5"}}}, lambda c: c.score("length", [ITEM])),
    *[({path: answer}, call) for path, call in (("/correlate", lambda c: c.correlate([1.0, 2.0], {"m": [1.0, 2.0]})),
                                                ("/human-eval", lambda c: c.human_eval([])))
      for answer in ([], "x", None, {"model": "m", "version": "v", "ranking": []})],
]


@pytest.mark.parametrize(("answers", "call"), NOT_THE_SHAPE)
def test_an_answer_that_is_json_but_not_the_services_is_a_server_error(answers, call):
    with answering(answers) as url, Client(url, retry_deadline=0) as client:
        with pytest.raises(ServerError) as caught:
            call(client)
    error = caught.value
    assert (error.status, error.code) == (200, "bad_answer")
    assert "not the service's" in error.message


def test_a_chunk_whose_ranking_leaves_out_candidates_is_a_server_error():
    """Six candidates in two chunks of three, each answered with an empty ranking and nothing skipped."""
    answers = {"/models": {"models": [], "limits": {"max_candidates": 3}},
               "/rerank": {"model": "m", "version": "v", "ranking": []}}
    with answering(answers) as url, Client(url, retry_deadline=0) as client:
        with pytest.raises(ServerError) as caught:
            client.rerank("m", ["hi"], ["a", "b", "c", "d", "e", "f"])
    assert (caught.value.status, caught.value.code) == (200, "bad_answer")
    assert "ranked 0 candidates of 3" in caught.value.message


def test_an_empty_token_is_no_token_and_del_is_refused():
    from dialscore_client import transport

    assert not transport.checked_token("")  # token=os.environ.get("X", "") sends none, as before
    with pytest.raises(ValueError, match="token must be printable ASCII"):
        transport.checked_token("ab\x7fc")  # DEL is a control character


def _answer(status: int, body: bytes, headers: dict[str, str] | None = None) -> requests.Response:
    response = requests.Response()
    response.status_code, response._content, response.url = status, body, "http://proxy.invalid/score"
    response.headers.update(headers or {})
    return response


def test_a_bare_500_is_a_server_error_and_a_bare_4xx_not():
    """Without the service's JSON body the class comes from the status: every 5xx is a ServerError."""
    assert isinstance(error_from_response(_answer(500, b"<html>oops</html>")), ServerError)
    assert not isinstance(error_from_response(_answer(418, b"teapot")), ServerError)


def test_a_retry_after_date_in_the_past_asks_for_no_wait():
    """A proxy's clock ahead of ours dates Retry-After in our past: no wait, never a negative one."""
    answer = _answer(503, b"", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    assert error_from_response(answer).retry_after == 0.0
    assert error_from_response(_answer(503, b"", {"Retry-After": "7"})).retry_after == 7.0
