"""The front in process: its routing, cost keys, settings and headers; over real gunicorn in test_framing.py and tests/integration."""
import asyncio

import pytest

from service.errors import BadHeader
from service.server.front import budget_of
from tests.asgi_client import answer


def test_the_read_timeout_setting_is_checked(monkeypatch):
    from service.config import load_server_settings

    monkeypatch.delenv("DIALSCORE_READ_TIMEOUT", raising=False)
    assert load_server_settings().read_timeout == 10.0
    for bad in ("0", "-1", "nan", "soon"):
        monkeypatch.setenv("DIALSCORE_READ_TIMEOUT", bad)
        with pytest.raises(ValueError):
            load_server_settings()


def test_the_budget_is_the_header_else_the_default_and_a_bad_one_is_400():
    assert budget_of(None, 30.0) == 30.0
    assert budget_of("0.25", 30.0) == 0.25
    assert budget_of("2.", 30.0) == 2.0 and budget_of(".5", 30.0) == 0.5
    assert budget_of("3600", 30.0) == 3600.0  # the most API.md allows, and the client's MAX_BUDGET
    for bad in ("0", "-1", "nan", "inf", "soon", "3601", "3600.001", "1_0", "1e3", "+2", " 5", "0x10", "٣", ""):
        with pytest.raises(BadHeader) as raised:
            budget_of(bad, 30.0)
        assert raised.value.status == 400 and raised.value.details == {"X-Request-Timeout": bad}


@pytest.fixture()
def front(baseline_store):
    """A worker's front over the Flask app on the baseline models, loaded."""
    from service.app import create_app
    from service.config import load_server_settings
    from service.server.front import Front

    return Front(create_app({"model_store": baseline_store, "load_sync": True}), load_server_settings())


def test_open_inference_protocol_paths_take_the_lanes_of_their_v1_twins(front):
    """/v2/.../infer is scoring work, admitted as /score is (its model, from the path, keys the cost);
    the v2 health paths are probes."""
    from service.server.front import SHARED_COST_KEY

    lane = lambda method, path: front.route(method, path)[0]  # noqa: E731
    assert lane("POST", "/v2/models/length/infer") is front.scoring
    assert lane("POST", "/v2/models/length/versions/1/infer") is front.scoring
    assert lane("POST", "/v2/models/%6cength/infer") is front.scoring  # any spelling of the path
    assert lane("GET", "/v2/health/ready") is front.probes
    assert lane("GET", "/v2/models/length") is front.other
    assert lane("POST", "/score") is front.scoring and front.route("POST", "/score")[2] == []
    assert lane("POST", "/rerank") is front.scoring
    assert lane("POST", "/correlate") is front.research and lane("POST", "/human-eval") is front.research
    assert lane("GET", "/models") is front.other
    assert front.cost_key(front.route("POST", "/v2/models/length/infer")[2]) == "length"
    assert front.cost_key(front.route("POST", "/v2/models/made-up/infer")[2]) == SHARED_COST_KEY


def test_a_refusal_is_counted_under_the_route_the_app_would_count_it_under(front):
    """The metrics' endpoint label of an answer the front gives is the app's route for the decoded path,
    as the app labels the answers it gives: refusals of /v2 scoring were "other"."""
    assert front.route("POST", "/score")[1] == "/score"
    assert front.route("POST", "/v2/models/length/infer")[1] == "/v2/models/<name>/infer"
    assert front.route("POST", "/no-such-path")[1] == "unmatched"
    assert front.route("DELETE", "/score")[1] == "unmatched"


def test_the_cost_table_keys_by_route_not_by_the_path_a_client_spells(front):
    """Admission learnt a cost per raw path: every distinct 404 path or /v2 model name a client sent
    was a new entry, for as long as the worker lived."""
    from service.server.admission import size_class
    from service.server.front import head_bytes
    from tests.asgi_client import Client

    for i in range(40):
        assert answer(front, "GET", f"/no-such-page/{i}") == 404
        assert answer(front, "POST", f"/v2/models/made-up-{i}/infer", b'{"inputs": []}') in (400, 404, 422)
    assert answer(front, "POST", "/score", b'{"model": "length", "items": [{"context": ["a"], '
                                           b'"response": "b"}]}') == 200
    answer(front, "POST", "/v2/models/length/infer", b'{"inputs": []}')  # a served model, named in the path
    kinds = {kind for lane in (front.probes, front.scoring, front.research, front.other)
             for kind in lane.admission._times}
    assert kinds == {("unmatched", "?"), ("/v2/models/<name>/infer", "?"), ("/score", "length"),
                     ("/v2/models/<name>/infer", "length")}, kinds
    # admission's size is the head's bytes and the body's (a bodiless request's cost is its head's)
    head = head_bytes(Client("GET", "/no-such-page/39", b"").scope())
    assert set(front.other.admission._times["unmatched", "?"]) == {size_class(head)}


def test_a_worker_stopping_on_sigterm_is_not_also_recycled(front):
    """After SIGTERM the worker drains (listener open until no connection is left); reaching
    max_requests then must not recycle it, which closes the listener at once."""
    import time

    recycled: list[int] = []
    front.max_requests, front.recycle = 1, lambda: recycled.append(front.answered)
    front.stopping_since = time.monotonic()
    assert answer(front, "GET", "/models") == 503 and recycled == []
    front.stopping_since, front.max_requests = None, 2
    assert answer(front, "GET", "/models") == 200 and recycled == [2]  # the count, without a SIGTERM


def test_probes_do_not_count_towards_max_requests(front):
    """An idle pod answers only its probes and scrapes: counted, they would restart its workers every
    max_requests probes, each restart a model reload, and one answering /readyz could keep the pod unready."""
    recycled: list[int] = []
    front.max_requests, front.recycle = 2, lambda: recycled.append(front.answered)
    for path in ("/healthz", "/readyz", "/metrics", "/v2/health/ready", "/v2/health/live") * 3:
        assert answer(front, "GET", path) == 200 and recycled == [], path
    assert answer(front, "GET", "/models") == 200 and recycled == []
    assert answer(front, "GET", "/models") == 200 and recycled == [2]


def test_a_worker_still_loading_its_models_is_not_recycled(front):
    """Past DIALSCORE_MAX_WORKER_MEMORY_MIB (or its count) while its models loaded in the background, a
    worker was recycled mid-load, and the pod's first readiness waited for a replacement's whole load."""
    recycled: list[int] = []
    front.max_requests, front.recycle = 1, lambda: recycled.append(front.answered)
    front.store.loaded = False
    try:
        assert answer(front, "GET", "/models") == 200 and recycled == []
    finally:
        front.store.loaded = True
    assert answer(front, "GET", "/models") == 200 and recycled == [2]


def test_a_worker_recycles_by_count_only_while_every_sibling_serves(front, monkeypatch, tmp_path):
    """Two workers reached DIALSCORE_MAX_REQUESTS within 14 ms (once one stops taking requests, the other
    takes them all) and the pod had no worker for the 4 s of their reloads. A worker past its count
    waits for its siblings' markers, and drops its own as it recycles."""
    import os

    from service.store import readiness

    monkeypatch.setenv(readiness.DIR_ENV, str(tmp_path))
    readiness.record_workers(2)
    readiness.mark_ready(os.getpid())
    recycled: list[int] = []
    front.max_requests, front.recycle = 2, lambda: recycled.append(front.answered)
    for _ in range(3):  # the sibling is loading: past the count, this worker serves on
        assert answer(front, "GET", "/models") == 200
    assert recycled == []
    readiness.mark_ready(os.getppid())  # the sibling (a live process) has loaded
    assert answer(front, "GET", "/models") == 200 and recycled == [4]
    assert readiness.loaded_workers() == {os.getppid()}


def test_while_the_models_load_scoring_is_answered_503_not_ready_at_once(baseline_store):
    """The contract's 503 `not_ready` with Retry-After, at once: only a worker that starts with its pod
    loads while it takes connections (one that replaces another loads first), and the pod is not ready
    then (service/store/readiness.py)."""
    import json

    from service.app import create_app
    from service.config import load_server_settings
    from service.server.front import Front
    from tests.asgi_client import Client

    app = create_app({"model_store": baseline_store, "load_sync": True})
    store = app.extensions["dialscore.store"]
    store.loaded = False  # as the store reports while it loads
    front = Front(app, load_server_settings())
    score = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'

    def call(method: str, path: str, body: bytes = b"") -> Client:
        client = Client(method, path, body)
        asyncio.run(front(client.scope(), client.receive, client.send))
        return client

    try:
        refused = call("POST", "/score", score)
        assert refused.status == 503 and (b"retry-after", b"1") in refused.messages[0]["headers"]
        assert json.loads(refused.messages[1]["body"])["error"]["code"] == "not_ready"
        listing = call("GET", "/models")
        assert listing.status == 200 and json.loads(listing.messages[1]["body"])["loading"] is True
    finally:
        store.loaded = True
    for lane in (front.probes, front.scoring, front.research, front.other):
        lane.run.executor.shutdown(wait=True)


def test_a_queue_of_zero_refuses_only_what_would_wait_and_never_a_probe(baseline_store):
    """DIALSCORE_MAX_QUEUE=0 means no waiting: a request a free thread takes is served, one after
    another; the probes keep a queue of their own, so that probes sent at once are all answered
    (a refused health check fails the pod's liveness or readiness)."""
    import dataclasses

    from service.app import create_app
    from service.config import load_server_settings
    from service.server.front import Front
    from tests.asgi_client import Client

    front = Front(create_app({"model_store": baseline_store, "load_sync": True}),
                  dataclasses.replace(load_server_settings(), max_queue=0))
    score = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'

    async def at_once(clients: list[Client]) -> list[int | None]:
        await asyncio.gather(*(front(c.scope(), c.receive, c.send) for c in clients))
        return [c.status for c in clients]

    try:
        for _ in range(4):
            assert asyncio.run(at_once([Client("POST", "/score", score)])) == [200]
        paths = ("/healthz", "/readyz", "/metrics")
        assert [answer(front, "GET", path) for path in paths] == [200] * 3  # each kind measured, as in a pod
        probes = [Client("GET", path, b"") for path in paths * 10]
        statuses = asyncio.run(at_once(probes))
        assert statuses == [200] * len(probes), statuses
    finally:
        for lane in (front.probes, front.scoring, front.research, front.other):
            lane.run.executor.shutdown(wait=True)


def _front_with(baseline_store, **settings):
    import dataclasses

    from service.app import create_app
    from service.config import load_server_settings
    from service.server.front import Front

    app = create_app({"model_store": baseline_store, "load_sync": True})
    return Front(app, dataclasses.replace(load_server_settings(), **settings)), app


def _status_of(front, client) -> int | None:
    asyncio.run(front(client.scope(), client.receive, client.send))
    return client.status


@pytest.mark.parametrize("chunked", [False, True])
def test_a_body_of_exactly_the_limit_is_read_and_one_byte_more_is_413(baseline_store, chunked):
    """DIALSCORE_MAX_BODY_BYTES is the largest body taken: the client packs batches up to it."""
    from tests.asgi_client import Client

    body = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'
    front, _ = _front_with(baseline_store, max_body_bytes=len(body) + 40)
    try:
        at_limit = body[:-1] + b" " * 40 + b"}"
        for parts in (1, 3):
            assert _status_of(front, Client("POST", "/score", at_limit, parts=parts, chunked=chunked)) == 200
            assert _status_of(front, Client("POST", "/score", at_limit[:-1] + b" }", parts=parts,
                                            chunked=chunked)) == 413
    finally:
        for lane in (front.probes, front.scoring, front.research, front.other):
            lane.run.executor.shutdown(wait=True)


def test_the_bytes_held_for_bodies_are_bounded_at_the_setting_itself(baseline_store):
    """DIALSCORE_MAX_PENDING_BYTES: a body that brings the worker's held bytes to it is read; one byte past
    it is 503 overloaded."""
    import json

    from tests.asgi_client import Client

    body = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'
    front, _ = _front_with(baseline_store, max_pending_bytes=len(body))
    try:
        assert _status_of(front, Client("POST", "/score", body)) == 200
        over = Client("POST", "/score", body[:-1] + b" }")
        assert _status_of(front, over) == 503
        assert json.loads(over.messages[1]["body"])["error"]["code"] == "overloaded"
    finally:
        for lane in (front.probes, front.scoring, front.research, front.other):
            lane.run.executor.shutdown(wait=True)


def test_an_answer_written_after_its_deadline_is_counted_late(baseline_store):
    """dialscore_finished_late_total, which the load test's overload runs must keep at 0: a request of a
    kind not measured yet is admitted to a free thread whatever its budget, and a bootstrap of 10,000
    resamples of 200 items (0.3 s on a 2-core Xeon) outlasts a budget of 50 ms, which leaves the loop
    time to hand it to the thread on a busy machine."""
    import json

    from tests.asgi_client import Client
    from tests.conftest import metric_sample

    front, app = _front_with(baseline_store)
    human = [float(i % 7) for i in range(200)]
    body = json.dumps({"human": human, "scores": {"m": human[::-1]}, "resamples": 10000}).encode()
    try:
        before = metric_sample(app.test_client(), "dialscore_finished_late_total")
        assert _status_of(front, Client("POST", "/correlate", body, budget="0.05")) == 200
        assert metric_sample(app.test_client(), "dialscore_finished_late_total") == before + 1
        assert _status_of(front, Client("POST", "/correlate", body, budget="60")) == 200
        assert metric_sample(app.test_client(), "dialscore_finished_late_total") == before + 1
    finally:
        for lane in (front.probes, front.scoring, front.research, front.other):
            lane.run.executor.shutdown(wait=True)


def test_a_correlates_cost_is_learnt_per_resamples_class(front):
    """Keyed by body size alone, one bootstrap of 10,000 resamples set the cost of every /correlate of its
    size: those with few resamples and a short budget were refused on an idle worker."""
    import json

    for resamples in (10, 1000, None):
        body = {"human": [1, 2, 3, 4, 5], "scores": {"m": [1, 3, 2, 5, 4]}, "methods": ["pearson"]}
        body.update({"resamples": resamples} if resamples else {})
        assert answer(front, "POST", "/correlate", json.dumps(body).encode()) == 200
    assert set(front.research.admission._times) == {("/correlate", "?~4"), ("/correlate", "?~10"), ("/correlate", "?")}
    assert answer(front, "POST", "/score", b'{"model": "length", "resamples": 10, "items": [{"context": ["a"], '
                                           b'"response": "b"}]}') == 422
    assert ("/score", "length") in front.scoring.admission._times  # scoring's kinds are not parted by resamples


def test_a_header_field_of_exactly_the_limit_is_taken_and_one_byte_more_is_431(baseline_store):
    """DIALSCORE_MAX_HEADER_BYTES counts a field as sent: its name, `: ` and its value."""
    from tests.asgi_client import Client

    front, _ = _front_with(baseline_store, max_header_bytes=64)
    try:
        for value_bytes, status in ((64 - len("x-pad") - 2, 200), (64 - len("x-pad") - 1, 431)):
            client = Client("GET", "/models", b"")
            scope = client.scope()
            scope["headers"] = [*scope["headers"], (b"x-pad", b"v" * value_bytes)]
            asyncio.run(front(scope, client.receive, client.send))
            assert client.status == status, (value_bytes, client.status)
    finally:
        for lane in (front.probes, front.scoring, front.research, front.other):
            lane.run.executor.shutdown(wait=True)


def _head(client) -> dict[bytes, bytes]:
    """The answer's header fields (`connection: close` where the front ends the connection)."""
    start = next(m for m in client.messages if m["type"] == "http.response.start")
    return dict(start["headers"])


def _serve(front, client, scope=None, within_s: float = 5.0):
    asyncio.run(asyncio.wait_for(front(scope or client.scope(), client.receive, client.send), within_s))
    return client


def _stop(front) -> None:
    for lane in front.lanes:
        lane.run.executor.shutdown(wait=True)


class _Stalled:
    """A client that sent its head declaring a body and then nothing more."""

    async def receive(self) -> dict:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


def test_head_bytes_count_the_head_as_sent():
    """DIALSCORE_MAX_REQUEST_LINE and _MAX_HEAD_BYTES measure the bytes on the wire: the line without its CRLF,
    and the head from the line to its blank line."""
    from service.server.front import head_bytes, line_bytes

    scope = {"method": "POST", "raw_path": b"/score", "query_string": b"a=1",
             "headers": [(b"host", b"x"), (b"content-length", b"12")]}
    sent = b"POST /score?a=1 HTTP/1.1\r\nhost: x\r\ncontent-length: 12\r\n\r\n"
    assert line_bytes(scope) == len(b"POST /score?a=1 HTTP/1.1") and head_bytes(scope) == len(sent)


def test_the_header_count_and_the_whole_heads_limits_are_the_largest_taken(baseline_store):
    """DIALSCORE_MAX_HEADERS and DIALSCORE_MAX_HEAD_BYTES: a head at the limit is served, one past it is 431."""
    from service.server.front import head_bytes
    from tests.asgi_client import Client

    scope = Client("GET", "/models", b"").scope()
    fields, size = len(scope["headers"]), head_bytes(scope)
    at_limit, past_it = [(b"x-a", b"bc")], [(b"x-a", b"bcd")]  # 9 and 10 bytes with `: ` and CRLF
    cases = (({"max_headers": fields + 1}, at_limit, at_limit * 2), ({"max_head_bytes": size + 9}, at_limit, past_it))
    for settings, taken, refused in cases:
        front, _ = _front_with(baseline_store, **settings)
        try:
            for extra, status in ((taken, 200), (refused, 431)):
                client = Client("GET", "/models", b"")
                padded = {**scope, "headers": scope["headers"] + extra}
                assert _serve(front, client, padded).status == status, (settings, extra, client.status)
        finally:
            _stop(front)


def test_a_probe_answers_at_once_whatever_body_it_declares_and_ends_the_connection(baseline_store):
    """A probe reads no body: a /healthz declaring one that never comes is answered at once, and the answer
    ends the connection (the body would be read as the next request)."""
    from tests.asgi_client import Client

    front, _ = _front_with(baseline_store, read_timeout=3.0)
    try:
        client = Client("GET", "/healthz", b"x" * 100)
        asyncio.run(asyncio.wait_for(front(client.scope(), _Stalled().receive, client.send), 1.0))
        assert client.status == 200 and _head(client).get(b"connection") == b"close"
    finally:
        _stop(front)


def test_a_body_read_or_drained_whole_keeps_the_connection_and_one_past_the_drain_ends_it(baseline_store):
    """A body the app reads, or the front drops whole after its answer (a 404's, a 413's within
    DRAIN_FACTOR times the limit), leaves the connection for the client's next request; a 413 whose
    body runs past what is drained ends it."""
    from service.server.front import DRAIN_FACTOR
    from tests.asgi_client import Client

    limit = 256
    body = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'
    front, _ = _front_with(baseline_store, max_body_bytes=limit)
    try:
        cases = [(Client("POST", "/score", body, parts=3), 200, None),
                 (Client("POST", "/no-such-page", b"y" * 100, parts=2), 404, None),
                 (Client("POST", "/score", b" " * (3 * limit), parts=12), 413, None),
                 # declared past the limit, so nothing read: two parts drained, the whole budget, and a third coming
                 (Client("POST", "/score", b" " * (DRAIN_FACTOR * limit * 3 // 2), parts=3), 413, b"close")]
        for client, status, connection in cases:
            _serve(front, client)
            assert (client.status, _head(client).get(b"connection")) == (status, connection), client
            if connection is None:
                assert client.given == len(client.pieces), client  # every part read, none left on the socket
    finally:
        _stop(front)


def test_refusals_mid_body_drop_what_comes_and_end_the_connection(baseline_store):
    """503 `overloaded` past DIALSCORE_MAX_PENDING_BYTES drops the rest of the body as it comes, so that its
    answer meets no reset, and a 408 (the body stalled) ends the connection: neither connection is reused."""
    import json

    from tests.asgi_client import Client

    front, _ = _front_with(baseline_store, max_pending_bytes=100, read_timeout=0.2)
    try:
        over = _serve(front, Client("POST", "/score", b" " * 300, parts=3))
        assert json.loads(over.messages[1]["body"])["error"]["code"] == "overloaded"
        assert _head(over).get(b"connection") == b"close" and over.given == len(over.pieces), over
        stalled = _serve(front, Client("POST", "/score", b" " * 20, parts=2, gap_s=0.4))
        assert stalled.status == 408 and _head(stalled).get(b"connection") == b"close"
        assert front.held == 0
    finally:
        _stop(front)


def test_a_client_that_leaves_before_its_body_is_whole_gets_no_answer(baseline_store):
    """Its disconnect is not the body's end: nothing reaches the app, nothing is answered, nothing held."""
    from tests.asgi_client import Client

    front, _ = _front_with(baseline_store)
    try:
        body = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'
        gone = _serve(front, Client("POST", "/score", body, parts=3, leave_after=1))
        assert gone.messages == [] and front.held == 0
        assert not front.scoring.admission.queue and not front.scoring.admission.running
    finally:
        _stop(front)


def test_a_model_named_by_any_json_value_reaches_the_app(front):
    """The cost key reads `model` from the body unparsed: an object or a list there is the app's 422, not
    an exception on the loop."""
    for model in (b'{"a": 1}', b"[[1]]", b"[{}]"):
        assert answer(front, "POST", "/score", b'{"model": %s, "items": []}' % model) in (400, 422), model


def test_after_a_recycle_every_arrival_is_still_served_and_ends_its_connection(front):
    """Recycling by count stops the listener; requests already on their way are served (only a SIGTERM
    refuses them), each answer closing its connection."""
    from tests.asgi_client import Client

    recycled: list[int] = []
    front.max_requests, front.recycle = 1, lambda: recycled.append(front.answered)
    assert answer(front, "GET", "/models") == 200 and recycled == [1]
    after = _serve(front, Client("GET", "/models", b""))
    assert after.status == 200 and _head(after).get(b"connection") == b"close" and recycled == [1]


def test_a_body_framed_both_ways_is_read_chunked(front):
    """RFC 9112 6.1: Transfer-Encoding overrides Content-Length, even a Content-Length of 0."""
    from tests.asgi_client import Client

    body = b'{"model": "length", "items": [{"context": ["a"], "response": "b"}]}'
    client = Client("POST", "/score", body, parts=2, chunked=True)
    scope = client.scope()
    scope["headers"].append((b"content-length", b"0"))
    assert _serve(front, client, scope).status == 200 and _head(client).get(b"connection") == b"close"


def test_length_framed_hands_on_one_content_length_and_no_transfer_coding():
    from service.server.front import length_framed

    scope = {"headers": [(b"host", b"x"), (b"transfer-encoding", b"chunked"), (b"content-length", b"5")]}
    assert length_framed(scope, b"abc")["headers"] == [(b"host", b"x"), (b"content-length", b"3")]


def test_the_slot_is_freed_as_the_last_declared_byte_goes_out():
    """a2wsgi ends every answer with an empty part after the thread returns: admission's slot is freed at
    the last byte the Content-Length declares, when the client may already send its next request."""
    from service.server.front import Exchange

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def run() -> list[int]:
        freed: list[int] = []
        exchange = Exchange({"headers": [], "method": "GET", "raw_path": b"/", "query_string": b""}, send)
        exchange.on_answered = lambda: freed.append(len(sent))
        await exchange.send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"4")]})
        await exchange.send({"type": "http.response.body", "body": b"ab", "more_body": True})
        await exchange.send({"type": "http.response.body", "body": b"cd", "more_body": True})
        await exchange.send({"type": "http.response.body", "body": b""})
        return freed

    assert asyncio.run(run()) == [2]  # once, before the last declared part goes out


def test_a_refusal_is_counted_as_an_error_and_a_503_as_a_refusal_and_an_admitted_wait_is_observed(front):
    """dialscore_errors_total and dialscore_refused_total count the front's own answers (a 400 is no
    refusal), and dialscore_queue_wait_seconds each admitted request's wait for a thread."""
    import time

    from prometheus_client import REGISTRY

    from tests.asgi_client import Client

    samples = (("dialscore_errors_total", {"code": "bad_request"}), ("dialscore_errors_total", {"code": "shutting_down"}),
               ("dialscore_refused_total", {"reason": "shutting_down"}), ("dialscore_refused_total", {"reason": "bad_request"}),
               ("dialscore_queue_wait_seconds_count", {}))
    before = [REGISTRY.get_sample_value(*sample) or 0.0 for sample in samples]
    assert _serve(front, Client("GET", "/models", b"", budget="soon")).status == 400
    assert answer(front, "GET", "/models") == 200
    front.stopping_since = time.monotonic()
    assert answer(front, "GET", "/models") == 503
    after = [REGISTRY.get_sample_value(*sample) or 0.0 for sample in samples]
    assert [b - a for a, b in zip(before, after)] == [1, 1, 1, 0, 1]


def test_overdue_names_a_running_request_past_its_deadline_and_grace():
    """The worker withholds its heartbeat for a request still running `grace` seconds past its deadline;
    one still queued is admission's to drop, not a stuck thread."""
    from types import SimpleNamespace

    from service.server.front import Front

    running, queued = SimpleNamespace(deadline=10.0), SimpleNamespace(deadline=0.0)
    front = Front.__new__(Front)
    front.lanes = (SimpleNamespace(admission=SimpleNamespace(running=[running], queue=[queued])),)
    assert front.overdue(40.0, 30.0) is None and front.overdue(40.5, 30.0) is running


def test_recycle_reason_reads_the_peak_resident_memory_in_mib():
    """DIALSCORE_MAX_WORKER_MEMORY_MIB against ru_maxrss (KiB on Linux); 0 is no limit."""
    import resource
    from types import SimpleNamespace

    from service.server.front import Front

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    front = Front.__new__(Front)
    front.max_requests = front.answered = 0
    for limit, recycles in ((int(peak_mib) - 1, True), (int(peak_mib) + 1024, False), (0, False)):
        front.settings = SimpleNamespace(max_worker_memory_mib=limit)
        assert bool(front.recycle_reason()) is recycles, (limit, peak_mib)


def test_a_queued_request_that_can_no_longer_meet_its_deadline_is_refused_then_not_when_a_thread_frees():
    """The loop wakes at the next queued request's latest start (dispatch's timer): a request queued behind
    one that runs longer than expected is refused 503 then, not once that one is answered."""
    import time

    import flask

    from service.config import load_server_settings
    from service.server.front import Front
    from tests.asgi_client import Client

    app, research = flask.Flask("sleeper"), flask.Blueprint("analysis", "sleeper")
    research.add_url_rule("/sleep/<int:ms>", "sleep", lambda ms: time.sleep(ms / 1000) or "{}", methods=["POST"])
    app.register_blueprint(research)
    front = Front(app, load_server_settings())
    slow, queued = Client("POST", "/sleep/800", b""), Client("POST", "/sleep/1", b"", budget="0.2")

    async def run() -> int | None:
        measured = Client("POST", "/sleep/1", b"")  # the kind's cost: about 1 ms
        await front(measured.scope(), measured.receive, measured.send)
        task = asyncio.create_task(front(slow.scope(), slow.receive, slow.send))
        await asyncio.sleep(0.05)
        await front(queued.scope(), queued.receive, queued.send)
        slow_then = slow.status  # None: the slow request's answer has not begun
        await task
        return slow_then

    try:
        assert asyncio.run(run()) is None and (queued.status, slow.status) == (503, 200)
    finally:
        _stop(front)


@pytest.mark.parametrize("cancelled_first", ["running", "queued"])
def test_cancelled_requests_leave_no_slot_taken_in_either_order(front, cancelled_first):
    """uvicorn cancels the app's tasks at the graceful timeout. Where the running request's went first, its
    release started the queued ticket, whose handler then looked for it in the queue alone: the ticket
    stayed running for good, and its lane one thread short."""
    import json

    from tests.asgi_client import Client

    human = [float(i % 7) for i in range(200)]
    slow = json.dumps({"human": human, "scores": {"m": human[::-1]}, "resamples": 10000}).encode()
    admission = front.research.admission

    async def run() -> None:
        first, second = Client("POST", "/correlate", slow), Client("POST", "/correlate", slow)
        running = asyncio.create_task(front(first.scope(), first.receive, first.send))
        queued = asyncio.create_task(front(second.scope(), second.receive, second.send))
        for _ in range(500):  # the first takes the lane's one thread, the second waits for it
            if (len(admission.running), len(admission.queue)) == (1, 1):
                break
            await asyncio.sleep(0.001)
        assert (len(admission.running), len(admission.queue)) == (1, 1)
        for task in (running, queued) if cancelled_first == "running" else (queued, running):
            task.cancel()
        await asyncio.gather(running, queued, return_exceptions=True)
        # the cancelled request's thread still runs: it answers into this loop, which must outlive it
        await asyncio.get_running_loop().run_in_executor(None, front.research.run.executor.shutdown)

    asyncio.run(run())
    assert (admission.running, list(admission.queue)) == ([], [])
