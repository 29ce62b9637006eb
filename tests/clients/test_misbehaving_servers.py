"""Dead, hung and misbehaving servers (raw answers on a loopback port): every failure is a DialscoreError,
a retry waits at least its backoff, a slow answer is not retried, and the final error tells every attempt."""
from __future__ import annotations

import math
import threading

import pytest
from dialscore_client import Client, DialscoreError, NotReady, ServerError, TransportError, transport

from tests.clients.raw_server import head, raw_answering
from tests.live_server import free_port

JSON = "Content-Type: application/json"


@pytest.mark.parametrize("retry_after", ["0", "Wed, 21 Oct 2015 07:28:00 GMT"], ids=["zero", "past-date"])
def test_a_retry_after_shorter_than_the_backoff_does_not_shorten_it(retry_after):
    """503 with `Retry-After: 0` (or a date gone by) for 2 s: a few backed-off attempts, not thousands."""
    answer = head("503 Service Unavailable", "Content-Type: text/html", f"Retry-After: {retry_after}", body=b"busy")
    with raw_answering(answer) as served, pytest.raises(NotReady) as caught:
        Client(served.url, timeout=2, retry_deadline=2).models()
    assert caught.value.attempts == len(served.requests) <= 8, len(served.requests)


REFUSED = [
    (head("200 OK", JSON, "Content-Encoding: gzip", body=b'{"not": "gzip"}'), ServerError, 200, "bad_answer"),
    (head("302 Found", "Location: /again1"), DialscoreError, 302, "redirected"),
    (head("307 Temporary Redirect", "Location: ftp://127.0.0.1/x"), DialscoreError, 307, "redirected"),
    (head("307 Temporary Redirect", "Location: http://[bad/x"), DialscoreError, 307, "redirected"),
]


@pytest.mark.parametrize("timeout", [None, 5], ids=["no-timeout", "timeout"])
@pytest.mark.parametrize(("answer", "error", "status", "code"), REFUSED, ids=["gzip", "loop", "ftp", "bad-url"])
def test_an_answer_requests_cannot_follow_or_decode_is_a_dialscore_error(answer, error, status, code, timeout):
    with raw_answering(answer) as served, pytest.raises(error) as caught:
        Client(served.url, timeout=timeout, retry_deadline=5).models()
    assert (caught.value.status, caught.value.code, len(served.requests)) == (status, code, 1)


@pytest.mark.parametrize("timeout", [None, 5], ids=["no-timeout", "timeout"])
def test_a_callers_session_keeps_its_own_response_hooks_and_redirects_are_still_refused(timeout):
    """The client's redirect hook, passed per request, replaced the session's response hooks (requests
    merges hooks of one kind by replacing them): a caller's logging or token-refreshing hook never ran."""
    import requests

    seen: list[int] = []
    session = requests.Session()
    session.hooks["response"].append(lambda response, *args, **kwargs: seen.append(response.status_code))
    body = b'{"models": [], "limits": {}}'
    with raw_answering(head("200 OK", JSON, body=body)) as served:
        Client(served.url, timeout=timeout, session=session).models()
    assert seen == [200]
    with raw_answering(head("302 Found", "Location: /elsewhere")) as served, pytest.raises(DialscoreError) as caught:
        Client(served.url, timeout=timeout, retry_deadline=0, session=session).models()
    assert caught.value.code == "redirected" and seen == [200, 302]


def test_a_redirect_in_front_of_a_post_is_not_followed_as_a_get():
    with raw_answering(head("301 Moved Permanently", "Location: /elsewhere/correlate")) as served:
        with pytest.raises(DialscoreError) as caught:
            Client(served.url, retry_deadline=5).correlate([1.0, 2.0, 3.0], {"m": [1.0, 2.0, 3.0]})
    assert served.requests == ["POST /correlate HTTP/1.1"]
    assert caught.value.code == "redirected" and caught.value.details == {"location": "/elsewhere/correlate"}
    assert "/elsewhere/correlate" in caught.value.message


@pytest.mark.parametrize("base_url", ["127.0.0.1:18611", "ftp://127.0.0.1/", "http://[bad/x", "http://", "",
                                      "http://127.0.0.1:0"])
def test_a_base_url_that_is_not_http_is_refused_at_construction(base_url):
    with pytest.raises(ValueError, match="base_url"):
        Client(base_url)


@pytest.mark.parametrize(("arguments", "error"), [
    ({"timeout": math.inf}, ValueError), ({"timeout": math.nan}, ValueError), ({"timeout": 0}, ValueError),
    ({"timeout": -1}, ValueError), ({"timeout": "5"}, TypeError), ({"timeout": True}, TypeError),
    ({"retry_deadline": math.nan}, ValueError), ({"retry_deadline": -1}, ValueError),
    ({"retry_deadline": None}, TypeError)])
def test_a_timeout_or_retry_deadline_that_is_not_seconds_is_refused_at_construction(arguments, error):
    with pytest.raises(error, match=next(iter(arguments))):
        Client("http://127.0.0.1:8000", **arguments)


def test_a_body_that_stalls_after_the_head_is_a_timeout_not_retried(monkeypatch):
    """Without a timeout, a body whose bytes stop for the client's idle wait is as slow an answer as a head
    that never comes: `timeout`, and the slow work is not sent again."""
    monkeypatch.setattr(transport, "IDLE_TIMEOUT", 0.5)
    with raw_answering(head("200 OK", JSON, body=b'{"models": [', length=100), hold=True) as served:
        with pytest.raises(TransportError) as caught:
            Client(served.url, timeout=None, retry_deadline=30).models()
    assert (caught.value.code, caught.value.attempts, len(served.requests)) == ("timeout", 1, 1)
    assert "answered 200, then sent no more of its body" in caught.value.message


def test_a_body_cut_short_says_the_server_answered():
    with raw_answering(head("200 OK", JSON, body=b'{"models": [', length=100)) as served:
        with pytest.raises(TransportError) as caught:
            Client(served.url, retry_deadline=0).models()
    assert caught.value.code == "connection_error" and len(served.requests) == 1
    assert "answered 200, then the connection ended before its body was whole" in caught.value.message


def _called_before_it_listens(answer: bytes, hold: bool = False) -> DialscoreError:
    """The error of `models()` called on a port where `answer` starts to be served only 0.8 s later:
    the attempts before find no connection."""
    port = free_port()
    holder = raw_answering(answer, hold=hold, port=port)
    listening = threading.Timer(0.8, holder.__enter__)
    listening.start()
    try:
        with pytest.raises(DialscoreError) as caught:
            Client(f"http://127.0.0.1:{port}", timeout=4).models()
    finally:
        listening.join()
        holder.__exit__(None, None, None)
    return caught.value


def test_an_error_after_retries_carries_every_attempt():
    """Refused connections until a server listens that never answers: the timeout is raised with the number
    of attempts, and says that the earlier ones found no connection."""
    error = _called_before_it_listens(b"", hold=True)
    assert isinstance(error, TransportError) and error.code == "timeout" and error.attempts >= 2, error
    assert f"This was attempt {error.attempts}; the ones before it failed with connection_error" in error.message
    assert "Could not connect to" in error.message


def test_an_error_given_up_on_says_how_the_attempts_before_it_failed():
    """Refused connections, then `overloaded` with a Retry-After past the timeout: the error raised said only
    how many attempts there were."""
    error = _called_before_it_listens(head("503 Service Unavailable", JSON, "Retry-After: 100",
                                           body=b'{"error": {"code": "overloaded", "message": "Busy.", "details": {}}}'))
    assert error.code == "overloaded" and error.attempts >= 2, error
    assert f"Gave up after {error.attempts} attempts" in error.message
    assert f"The ones before it failed with connection_error ({error.attempts - 1})." in error.message
