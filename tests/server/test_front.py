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
    for i in range(40):
        assert answer(front, "GET", f"/no-such-page/{i}") == 404
        assert answer(front, "POST", f"/v2/models/made-up-{i}/infer", b'{"inputs": []}') in (400, 404, 422)
    assert answer(front, "POST", "/score", b'{"model": "length", "items": [{"context": ["a"], '
                                           b'"response": "b"}]}') == 200
    kinds = {kind for lane in (front.probes, front.scoring, front.research, front.other)
             for kind in lane.admission._times}
    assert kinds == {("unmatched", "?"), ("/v2/models/<name>/infer", "?"), ("/score", "length")}, kinds


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
