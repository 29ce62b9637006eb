"""Deadlines: the client's `timeout` sent as X-Request-Timeout (what is left of it, on every attempt and chunk),
and the service's refusals retried after Retry-After only while the deadline leaves room for another attempt."""
from __future__ import annotations

import pickle
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import requests
from dialscore_client import (Client, DeadlineExceeded, NotReady, Overloaded, ShuttingDown, TransportError,
                              Unavailable, transport)

from tests.clients.conftest import TOKEN
from tests.clients.proxy import proxy
from tests.clients.raw_server import serving

ITEM = {"context": ["how was your weekend?"], "response": "great, i went hiking!", "reference": "fine."}
HEADER = "X-Request-Timeout"


def budgets(hop, start: int = 0) -> list[float | None]:
    """The X-Request-Timeout of each request the proxy received from `start` on (None: not sent)."""
    return [None if HEADER not in headers else float(headers[HEADER]) for headers in hop.received[start:]]


class _Recorder(requests.Session):
    """Answers every request with an empty JSON object and keeps the headers it was sent."""

    def __init__(self) -> None:
        super().__init__()
        self.sent: list[dict[str, str]] = []

    def request(self, method, url, headers=None, **kwargs):
        self.sent.append(dict(headers or {}))
        answer = requests.Response()
        answer.status_code, answer._content = 200, b"{}"
        return answer


def test_the_budget_sent_is_rounded_down_to_the_millisecond(monkeypatch):
    """The server's budget never outlasts the client's wait: 2.0005 s left is sent as 2.000, not 2.001."""
    now = time.monotonic()
    monkeypatch.setattr(transport.time, "monotonic", lambda: now)  # no time passes between deadline and send
    session = _Recorder()
    sender = transport.Transport("http://127.0.0.1:9", None, 10, 0, session, "test")
    sender.get("/models", now + 2.0005)
    assert session.sent[0][HEADER] == "2.000"


@pytest.mark.parametrize(("timeout", "first"), [(None, None), (5, 5.0), (10_000, 3600.0)])
def test_the_timeout_is_sent_as_the_budget(server, timeout, first):
    """None sends no header; a timeout over the server's maximum sends the maximum."""
    with proxy(server.port) as hop, Client(hop.url, timeout=timeout) as client:
        assert client.score("length", [ITEM]).scores == [4.0]
    sent = budgets(hop)
    assert [path for _, path, _ in hop.exchanges] == ["/models", "/score"]
    if first is None:
        assert sent == [None, None]
    else:
        assert first - 1 < sent[0] <= first and sent[1] <= sent[0], sent
        assert all(len(headers[HEADER].split(".")[1]) == 3 for headers in hop.received)


@pytest.mark.parametrize(("code", "error"), [("overloaded", Overloaded), ("shutting_down", ShuttingDown)])
def test_a_refusal_is_retried_after_retry_after_with_less_budget(server, code, error):
    with proxy(server.port) as hop, Client(hop.url, timeout=5) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 1, "1", code
        start = len(hop.arrivals)
        assert client.score("length", [ITEM]).scores == [4.0]
    assert [status for _, _, status in hop.exchanges[start:]] == [503, 200]
    waited = hop.arrivals[start + 1] - hop.arrivals[start]
    first, second = budgets(hop, start)
    assert 0.99 <= waited < 1.5, waited
    # The budgets are the client's clock, `waited` the proxy's arrivals: 0.1 s of slack for scheduling
    assert 4.5 < first <= 5 and 0.99 <= first - second <= waited + 0.1, (first, second, waited)
    assert issubclass(error, Unavailable)


@pytest.mark.parametrize("code", ["overloaded", "shutting_down"])
def test_a_refusal_whose_wait_does_not_fit_is_raised_at_once(server, code):
    """Retry-After 1 s with 0.9 s left: no second attempt, the server's error at once."""
    with proxy(server.port) as hop, Client(hop.url, timeout=0.9) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 5, "1", code
        start, started = len(hop.arrivals), time.monotonic()
        with pytest.raises(Unavailable) as caught:
            client.score("length", [ITEM])
    assert time.monotonic() - started < 0.5
    assert len(hop.arrivals) - start == 1
    failure = caught.value
    assert (failure.status, failure.code, failure.attempts, failure.retry_after) == (503, code, 1, 1.0)
    assert "(timeout 0.9 s)" in failure.message
    copy = pickle.loads(pickle.dumps(failure))
    assert (type(copy), copy.code, copy.retry_after) == (type(failure), code, 1.0)


def test_the_wait_must_leave_time_for_an_attempt(server):
    """Retry-After 1 s with 1.05 s left fits the wait but not transport.MIN_ATTEMPT after it."""
    assert transport.MIN_ATTEMPT > 0.05
    with proxy(server.port) as hop, Client(hop.url, timeout=1.05) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 1, "1", "overloaded"
        with pytest.raises(Overloaded):
            client.score("length", [ITEM])


@pytest.mark.parametrize(("code", "error"), [("overloaded", Overloaded), ("deadline_exceeded", DeadlineExceeded)])
def test_a_refusal_whose_expected_run_does_not_fit_after_the_wait_is_raised_at_once(server, code, error):
    """Retry-After 1 s fits in a 1.5 s timeout with MIN_ATTEMPT after it, but not with the 1.59 s of work
    the server's refusal says the request takes: no second attempt."""
    with proxy(server.port) as hop, Client(hop.url, timeout=1.5) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 5, "1", code
        hop.refusal_details = {"expected_run_s": 1.59, "budget_s": 1.5}
        start = len(hop.arrivals)
        with pytest.raises(error) as caught:
            client.score("length", [ITEM])
    assert len(hop.arrivals) - start == 1
    failure = caught.value
    assert (failure.code, failure.attempts, failure.details["expected_run_s"]) == (code, 1, 1.59)
    assert "(timeout 1.5 s): the wait and the 1.59 s the server expects the work to take" in failure.message


def test_a_refusal_whose_expected_run_fits_after_the_wait_is_retried(server):
    with proxy(server.port) as hop, Client(hop.url, timeout=5) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 1, "1", "overloaded"
        hop.refusal_details = {"expected_run_s": 1.59, "budget_s": 5}
        start = len(hop.arrivals)
        assert client.score("length", [ITEM]).scores == [4.0]
    assert [status for _, _, status in hop.exchanges[start:]] == [503, 200]


def test_deadline_exceeded_is_not_retried_without_budget(server):
    with proxy(server.port) as hop, Client(hop.url, timeout=0.8) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 5, "1", "deadline_exceeded"
        start = len(hop.arrivals)
        with pytest.raises(DeadlineExceeded) as caught:
            client.score("length", [ITEM])
    assert len(hop.arrivals) - start == 1 and caught.value.retry_after == 1.0


def test_deadline_exceeded_is_retried_without_a_client_timeout(server):
    """No timeout: the server's default budget ran out, and the caller set none of its own."""
    with proxy(server.port) as hop, Client(hop.url, timeout=None) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 1, "1", "deadline_exceeded"
        assert client.score("length", [ITEM]).scores == [4.0]
    assert [status for _, _, status in hop.exchanges[-2:]] == [503, 200]


def test_a_model_that_failed_to_load_is_not_retried(server):
    """503 `not_ready` without Retry-After: waiting will not load the model."""
    with proxy(server.port) as hop, Client(hop.url, timeout=10, retry_deadline=10) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 5, None, "not_ready"
        start, started = len(hop.arrivals), time.monotonic()
        with pytest.raises(NotReady) as caught:
            client.score("length", [ITEM])
    assert time.monotonic() - started < 0.5 and len(hop.arrivals) - start == 1
    assert (caught.value.code, caught.value.attempts, caught.value.retry_after) == ("not_ready", 1, None)


def test_models_still_loading_are_retried(server):
    with proxy(server.port) as hop, Client(hop.url, timeout=5) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 1, "1", "not_ready"
        assert client.score("length", [ITEM]).scores == [4.0]
    assert [status for _, _, status in hop.exchanges[-2:]] == [503, 200]


def test_the_chunks_of_a_batch_share_one_deadline(small_server):
    """Seven candidates over max_candidates 3: the look-up of the limits and three chunks, each sent with what
    the ones before it left; the first chunk's wait of 1 s is gone from the rest's budget."""
    candidates = ["great, i went hiking!", "no", "fine.", "i don't know.", "why?", "yes, it was fun.", "ok"]
    with proxy(small_server.port) as hop, Client(hop.url, token=TOKEN, timeout=5) as client:
        hop.busy, hop.retry_after, hop.refusal = 0, "1", "overloaded"
        client.limits()  # another call: its own budget
        hop.busy = 1
        start = len(hop.arrivals)
        ranking = client.rerank("length", ["how was your weekend?"], candidates)
    assert len(ranking.ranking) == 7
    assert [status for _, _, status in hop.exchanges[start:]] == [503, 200, 200, 200]
    sent = budgets(hop, start)
    assert 4.5 < sent[0] <= 5 and all(later < earlier for earlier, later in zip(sent, sent[1:])), sent
    assert sent[2] <= 5 - 0.99 and sent[3] <= sent[0] - (hop.arrivals[start + 3] - hop.arrivals[start]) + 0.1


def test_the_client_waits_no_longer_than_its_budget(server):
    """An answer slower than what is left of the timeout: the client stops waiting then, and does not retry."""
    with proxy(server.port) as hop, Client(hop.url, timeout=0.5) as client:
        client.limits()
        hop.delay = 1.5
        start, started = len(hop.arrivals), time.monotonic()
        with pytest.raises(TransportError) as caught:
            client.score("length", [ITEM])
        elapsed = time.monotonic() - started
    assert 0.45 <= elapsed < 0.8, elapsed
    assert caught.value.code == "timeout" and len(hop.arrivals) - start == 1


def test_a_batch_ends_with_its_deadline(small_server):
    """Two refusals of the first chunk spend the budget: the error is raised, the other chunks never sent."""
    candidates = ["great, i went hiking!", "no", "fine.", "i don't know.", "why?"]
    with proxy(small_server.port) as hop, Client(hop.url, token=TOKEN, timeout=1.5) as client:
        client.limits()
        hop.busy, hop.retry_after, hop.refusal = 2, "1", "overloaded"
        start, started = len(hop.arrivals), time.monotonic()
        with pytest.raises(Overloaded) as caught:
            client.rerank("length", ["how was your weekend?"], candidates)
    assert 0.99 <= time.monotonic() - started < 1.5
    assert [status for _, _, status in hop.exchanges[start:]] == [503, 503] and caught.value.attempts == 2
    first, second = budgets(hop, start)
    assert 1.4 < first <= 1.5 and second <= 0.5, (first, second)


@contextmanager
def dribbling_server(headers_too: bool, lasts: float = 8.0) -> Iterator[str]:
    """A loopback server that answers every request `200 OK` with `Content-Length: 2000`, then sends the body
    (and with `headers_too` the headers before it) one byte every 0.25 s, closing after `lasts` seconds."""
    def dribble(conn: socket.socket, stop: threading.Event) -> None:
        with conn:
            conn.recv(65536)
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n"
            sent, ends = b"" if headers_too else head, time.monotonic() + lasts
            conn.sendall(sent)
            for byte in (head if headers_too else b"") + b" " * 2000:
                if stop.is_set() or time.monotonic() > ends:
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
                time.sleep(0.25)

    with serving(dribble) as url:
        yield url


@pytest.mark.parametrize("headers_too", [False, True], ids=["slow-body", "slow-headers"])
def test_a_slowly_sent_answer_ends_with_the_timeout(headers_too):
    """Bytes arriving steadily, each gap shorter than the timeout: the call still ends when its budget does."""
    with dribbling_server(headers_too) as url, Client(url, timeout=2) as client:
        started = time.monotonic()
        with pytest.raises(TransportError) as caught:
            client.models()
        elapsed = time.monotonic() - started
        if not headers_too:  # the answer's socket is shut: the thread reading it ends, the server still sending
            for thread in threading.enumerate():
                if thread.name == "dialscore-request":
                    thread.join(timeout=2)
                    assert not thread.is_alive()
    assert caught.value.code == "timeout" and caught.value.status is None, caught.value
    assert elapsed < 3, elapsed
