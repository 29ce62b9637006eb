"""Retries: refused connections and 503 while a real server starts and loads its models, a proxy's Retry-After,
and a deadline that ends them with a clear error. A 4xx is never retried."""
from __future__ import annotations

import logging
import os
import socket
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from dialscore_client import (DEFAULT_TIMEOUT, Client, InvalidRequest, NotReady, Overloaded, ServerError,
                              TransportError, transport)

from tests.clients.conftest import SERVED
from tests.clients.proxy import proxy
from tests.live_server import REPO, SERVER_PYTHON, _stop, free_port

ITEM = {"context": ["how was your weekend?"], "response": "great, i went hiking!", "reference": "fine."}


def retries_logged(caplog: pytest.LogCaptureFixture, code: str) -> int:
    return sum(1 for r in caplog.records if r.name == "dialscore_client" and f"{code} (" in r.getMessage())


def test_waits_for_a_server_that_starts_after_it(store_link, server, caplog, monkeypatch):
    """The client's first attempts find nothing listening; once the server listens, a request that
    arrives while the models load waits in the worker's queue (within its budget) for them."""
    caplog.set_level(logging.INFO, logger="dialscore_client")
    monkeypatch.setattr(transport, "MAX_BACKOFF", 0.5)  # several attempts inside the loading window
    port = free_port()
    client = Client(f"http://127.0.0.1:{port}", timeout=None, retry_deadline=180)
    log_path = store_link.parent / f"late-server-{port}.log"
    with ThreadPoolExecutor(1) as pool, open(log_path, "wb") as log:
        scoring = pool.submit(client.score, "adem", [ITEM])
        while not retries_logged(caplog, "connection_error") and not scoring.done():
            time.sleep(0.05)
        env = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_MODEL_STORE": str(store_link),
               "DIALSCORE_MODELS": SERVED}
        env.pop("PROMETHEUS_MULTIPROC_DIR", None)
        process = subprocess.Popen([SERVER_PYTHON, "-m", "service", "--host", "127.0.0.1", "--port", str(port),
                                    "--workers", "1"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            result = scoring.result(timeout=180)
        finally:
            _stop(process)
    assert retries_logged(caplog, "connection_error") >= 1, log_path.read_text()
    assert result == Client(server.url).score("adem", [ITEM])


def test_retry_after_is_honoured(server):
    with proxy(server.port) as hop, Client(hop.url, retry_deadline=30) as client:
        client.limits()
        hop.busy, hop.retry_after = 2, "1"
        start = len(hop.arrivals)
        assert client.score("length", [ITEM]).scores == [4.0]
    arrivals = hop.arrivals[start:]
    assert [status for _, _, status in hop.exchanges[start:]] == [503, 503, 200]
    assert all(later - earlier >= 0.99 for earlier, later in zip(arrivals, arrivals[1:])), arrivals


def test_clients_refused_together_with_a_whole_second_do_not_come_back_together():
    """Retry-After is whole seconds: waited exactly, every client refused in one instant came back in one
    instant (8 threads, within 60 ms, round after round) and most were refused again."""
    waits = [transport.after_retry_after(1.0) for _ in range(200)]
    assert all(1.0 <= wait <= 1.25 for wait in waits) and max(waits) - min(waits) > 0.15
    assert transport.after_retry_after(None) == 0.0


def test_the_client_waits_retry_after_with_its_jitter(server, monkeypatch):
    """The jitter at its largest (a quarter of Retry-After): the retry comes 1.25 s after the refusal, so the
    client waits what after_retry_after says, not Retry-After alone."""
    monkeypatch.setattr(transport.random, "uniform", lambda low, high: high)
    with proxy(server.port) as hop, Client(hop.url, retry_deadline=30) as client:
        client.limits()
        hop.busy, hop.retry_after = 1, "1"
        start = len(hop.arrivals)
        assert client.score("length", [ITEM]).scores == [4.0]
    first, second = hop.arrivals[start:start + 2]
    assert second - first >= 1.24, hop.arrivals[start:]


def test_a_retry_after_past_the_deadline_ends_at_once(server):
    with proxy(server.port) as hop, Client(hop.url, retry_deadline=5) as client:
        client.limits()
        hop.busy, hop.retry_after = 10, "30"
        started = time.monotonic()
        with pytest.raises(NotReady) as caught:
            client.score("length", [ITEM])
    assert time.monotonic() - started < 2
    assert (caught.value.status, caught.value.code, caught.value.attempts) == (503, "http_503", 1)
    assert caught.value.retry_after == 30


def test_the_deadline_ends_503s_with_a_clear_error(server):
    with proxy(server.port) as hop, Client(hop.url, retry_deadline=1.5) as client:
        client.limits()
        hop.busy = 1000
        started = time.monotonic()
        with pytest.raises(NotReady) as caught:
            client.score("length", [ITEM])
    elapsed = time.monotonic() - started
    assert 1.5 <= elapsed < 3, elapsed
    assert caught.value.attempts >= 3 and caught.value.code == "http_503"
    assert f"Gave up after {caught.value.attempts} attempts in" in caught.value.message
    assert "(retry_deadline 1.5 s)" in caught.value.message


def test_the_deadline_ends_refused_connections():
    client = Client(f"http://127.0.0.1:{free_port()}", retry_deadline=1)
    started = time.monotonic()
    with pytest.raises(TransportError) as caught:
        client.models()
    assert 1 <= time.monotonic() - started < 2.5
    assert caught.value.status is None and caught.value.code == "connection_error"
    assert caught.value.attempts >= 2 and "Gave up after" in str(caught.value)


@pytest.mark.parametrize(("errno", "code", "retried"), [(socket.EAI_NONAME, "unknown_host", False),
                                                      (socket.EAI_AGAIN, "connection_error", True)])
def test_a_name_with_no_address_is_not_retried_a_resolver_not_answering_is(monkeypatch, errno, code, retried):
    """The resolver's own answers, whatever DNS the machine running the tests has: a typo in base_url
    fails at once; a resolver that says "try again" is retried until the deadline."""
    def resolve(host, *args, **kwargs):
        raise socket.gaierror(errno, "from the test's resolver")

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    started = time.monotonic()
    with pytest.raises(TransportError) as caught:
        Client("http://dialscore.example.invalid:8000", retry_deadline=1).models()
    assert caught.value.code == code and (caught.value.attempts >= 2) == retried
    assert (time.monotonic() - started >= 1) == retried
    if not retried:
        assert "dialscore.example.invalid has no address" in caught.value.message and "base_url" in caught.value.message


def test_a_closed_port_fails_within_the_default_budget():
    """No timeout given: the call still ends, within DEFAULT_TIMEOUT, however long retry_deadline is."""
    client = Client(f"http://127.0.0.1:{free_port()}")
    assert client._transport.timeout == DEFAULT_TIMEOUT < client._transport.retry_deadline
    started = time.monotonic()
    with pytest.raises(TransportError) as caught:
        client.rerank("unref-minilm", ["hi! how was your weekend?"], ["great, thanks!", "no"])
    elapsed = time.monotonic() - started
    assert DEFAULT_TIMEOUT - 1 <= elapsed <= DEFAULT_TIMEOUT + 0.5, elapsed
    assert caught.value.code == "connection_error" and caught.value.attempts >= 2
    assert f"(timeout {DEFAULT_TIMEOUT:g} s)" in str(caught.value)


def test_a_proxys_502_is_retried_until_the_deadline():
    with proxy(free_port()) as hop, pytest.raises(ServerError) as caught:
        Client(hop.url, retry_deadline=1).models()
    assert caught.value.code == "http_502" and caught.value.attempts == len(hop.exchanges) >= 2


def test_a_4xx_is_not_retried(server):
    with proxy(server.port) as hop, Client(hop.url, retry_deadline=30) as client:
        with pytest.raises(InvalidRequest):
            client.score("adem", [{"context": ["hello"], "response": "hi"}])
    assert hop.exchanges == [("GET", "/models", 200), ("POST", "/score", 422)]


def test_backoff_is_half_fixed_half_random_so_clients_that_failed_together_spread_out() -> None:
    for attempt in (1, 3, 20):
        delay = min(transport.MAX_BACKOFF, transport.FIRST_BACKOFF * 2.0 ** (attempt - 1))
        waits = [transport.backoff(attempt) for _ in range(200)]
        assert all(delay / 2 <= wait <= delay for wait in waits)
        assert max(waits) - min(waits) > delay / 4  # drawn, not one value for every client


def test_a_retry_after_past_the_cap_is_waited_as_the_cap_not_given_up_on(monkeypatch):
    """A Retry-After of a day (a wrong header) is taken as MAX_RETRY_AFTER: within a long retry_deadline the
    call waits that and tries again, rather than ending at once as for a wait that does not fit."""
    busy = Overloaded(503, "overloaded", "busy")
    busy.retry_after = 86_400.0
    outcomes: list = [busy, {"models": []}]

    def once(self, *args):
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    waits: list[float] = []
    monkeypatch.setattr(transport.Transport, "_once", once)
    monkeypatch.setattr(transport.time, "sleep", waits.append)
    sender = transport.Transport("http://127.0.0.1:9", None, None, 600, None, "test")
    assert sender.get("/models", None) == {"models": []}
    assert len(waits) == 1 and transport.MAX_RETRY_AFTER <= waits[0] <= transport.MAX_RETRY_AFTER * 1.25, waits


class _ConnectTimesOut(requests.Session):
    """A host that never answers the connection (a dead node, a dropped SYN): requests' ConnectTimeout."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def request(self, *args, **kwargs):
        self.attempts += 1
        raise requests.ConnectTimeout("connect timed out")


@pytest.mark.parametrize("timeout", [None, 5])
def test_a_connection_that_times_out_is_retried_as_no_connection(timeout):
    """No connection was made, so no work was started: unlike a read that timed out, it is sent again."""
    session = _ConnectTimesOut()
    with pytest.raises(TransportError) as caught:
        Client("http://127.0.0.1:9", timeout=timeout, retry_deadline=0.6, session=session).models()
    assert caught.value.code == "connection_error" and caught.value.attempts == session.attempts >= 2


@pytest.mark.parametrize(("status", "retried"), [(502, True), (503, True), (500, False), (504, False)])
def test_only_a_proxys_502_and_503_are_retried_by_status(status, retried):
    """A gateway timeout (504) may come after the work was done: sending it again would repeat slow work."""
    assert transport.retryable(ServerError(status, f"http_{status}", "from a proxy")) == retried


def test_the_services_overloaded_is_retried_as_a_429_too():
    """`overloaded` is a refusal before any work whether it comes as 503 or 429: waiting may cure both."""
    assert transport.retryable(Overloaded(429, "overloaded", "over the admission bound"))
    assert not transport.retryable(ServerError(429, "http_429", "a proxy's rate limit"))
