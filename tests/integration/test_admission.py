"""Admission control on real gunicorn: one worker, one scoring thread (the defaults' per-worker shape)."""
from __future__ import annotations

import http.client
import json
import random
import threading
import time

import pytest

from tests.conftest import copy_store
from tests.live_server import metric, running_server


def _post(port: int, path: str, body: object, headers: dict[str, str] | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("POST", path, body=json.dumps(body).encode(),
                     headers={"Content-Type": "application/json", **(headers or {})})
        response = conn.getresponse()
        return response.status, json.loads(response.read()), response
    finally:
        conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = copy_store(tmp_path_factory.mktemp("astore") / "model_store", ("length", "minilm-cosine"))
    with running_server(store, {"DIALSCORE_MODELS": "length,minilm-cosine"}, workers=1) as srv:
        yield srv


def _slow_items(n: int) -> list[dict]:
    rng = random.Random(7)
    words = "the a cat dog river market bread rain song city train friend letter morning".split()
    text = lambda k: " ".join(rng.choice(words) for _ in range(k))  # noqa: E731
    return [{"context": [text(60)], "response": text(60), "reference": text(60)} for _ in range(n)]


def test_a_request_that_cannot_finish_in_its_budget_is_refused_with_retry_after_and_never_computed(server):
    slow = threading.Thread(target=_post, args=(server.port, "/score", {"model": "minilm-cosine",
                                                                        "items": _slow_items(48)}))
    slow.start()
    time.sleep(0.3)  # the slow request holds the worker's one scoring thread
    scored_before = metric(server.port, 'dialscore_items_scored_total{model="length"}')
    status, body, response = _post(server.port, "/score", {"model": "length", "items": _slow_items(1)},
                                   {"X-Request-Timeout": "0.2", "X-Request-ID": "late-1"})
    slow.join()
    assert status == 503 and body["error"]["code"] in ("overloaded", "deadline_exceeded"), body
    assert int(response.getheader("Retry-After")) >= 1 and response.getheader("X-Request-ID") == "late-1"
    assert body["error"]["details"]["budget_s"] == 0.2
    assert metric(server.port, 'dialscore_items_scored_total{model="length"}') == scored_before  # not computed
    assert metric(server.port, "dialscore_refused_total") >= 1
    # with the worker free again, the same request is served
    assert _post(server.port, "/score", {"model": "length", "items": _slow_items(1)},
                 {"X-Request-Timeout": "5"})[0] == 200


def test_a_long_correlate_does_not_hold_a_live_bots_request(server):
    rng = random.Random(3)
    n = 2_000
    human = [rng.random() for _ in range(n)]
    body = {"human": human, "scores": {f"m{k}": [h + rng.random() for h in human] for k in range(3)},
            "methods": ["pearson", "spearman", "kendall"], "resamples": 4_000, "seed": 0}
    done: list[float] = []
    research = threading.Thread(target=lambda: (_post(server.port, "/correlate", body), done.append(time.monotonic())))
    research.start()
    time.sleep(0.5)
    started = time.monotonic()
    status, _, _ = _post(server.port, "/score", {"model": "length", "items": _slow_items(1)})
    answered = time.monotonic()
    research.join()
    assert status == 200
    assert done and done[0] > answered, "the /correlate ended first: the check proves nothing"
    assert answered - started < 1.0


def test_a_bad_budget_is_400_naming_the_header(server):
    status, body, _ = _post(server.port, "/score", {"model": "length", "items": _slow_items(1)},
                            {"X-Request-Timeout": "soon"})
    assert status == 400 and body["error"]["code"] == "bad_request"
    assert body["error"]["details"] == {"X-Request-Timeout": "soon"}


def test_a_queue_of_zero_serves_a_client_that_waits_for_each_answer(tmp_path):
    """DIALSCORE_MAX_QUEUE=0 refused about half of one keep-alive client's requests, each sent after the
    last answer had arrived, and a quarter over new connections: the thread's slot was freed only once
    its task returned, after the client had the answer and had sent again."""
    store = copy_store(tmp_path / "model_store", ("length",))
    body = json.dumps({"model": "length", "items": [{"context": ["hi"], "response": "ok"}]}).encode()
    statuses: list[int] = []
    with running_server(store, {"DIALSCORE_MODELS": "length", "DIALSCORE_MAX_QUEUE": "0"}, workers=1) as srv:
        kept = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        for _ in range(100):
            kept.request("POST", "/score", body, {"Content-Type": "application/json"})
            answer = kept.getresponse()
            answer.read()
            statuses.append(answer.status)
        kept.close()
        statuses += [_post(srv.port, "/score", json.loads(body))[0] for _ in range(40)]
    assert statuses == [200] * 140, {s: statuses.count(s) for s in set(statuses)}


def test_a_worker_whose_request_runs_a_worker_timeout_past_its_deadline_is_replaced(tmp_path):
    """A thread stuck in a request would keep its lane refusing for good while the loop heart-beats: the
    heartbeat is withheld once a request has run DIALSCORE_WORKER_TIMEOUT past its deadline, and gunicorn
    replaces the worker. A /correlate of several seconds stands in for the stuck thread; its 0.1 s budget
    lets it start (its kind is not measured yet) and its deadline passes at once."""
    from tests.live_server import worker_pids

    store = copy_store(tmp_path / "model_store", ("length",))
    limits = {"DIALSCORE_MAX_BOOTSTRAP_WORK": "100000000", "DIALSCORE_MAX_BOOTSTRAP_METRIC_WORK": "1000000000"}
    with running_server(store, {"DIALSCORE_MODELS": "length", "DIALSCORE_WORKER_TIMEOUT": "4", **limits},
                        workers=1) as srv:
        before = worker_pids(srv.process.pid)
        rng = random.Random(3)
        human = [rng.random() for _ in range(8_000)]
        body = {"human": human, "scores": {f"m{k}": [h + rng.random() for h in human] for k in range(3)},
                "methods": ["pearson", "spearman", "kendall"], "resamples": 10_000, "seed": 0}
        answers: list[object] = []

        def correlate() -> None:
            try:
                answers.append(_post(srv.port, "/correlate", body, {"X-Request-Timeout": "0.1"})[0])
            except (OSError, http.client.HTTPException) as error:
                answers.append(type(error).__name__)

        research = threading.Thread(target=correlate)
        research.start()
        deadline = time.monotonic() + 60
        while worker_pids(srv.process.pid) in (before, set()) and research.is_alive():
            assert time.monotonic() < deadline, srv.log()[-3000:]
            time.sleep(0.2)
        research.join(timeout=60)
        assert answers and answers[0] != 200, f"the /correlate was answered {answers}: nothing replaced its worker"
        assert "withholding the heartbeat" in srv.log() and "WORKER TIMEOUT" in srv.log()
        deadline = time.monotonic() + 60
        while worker_pids(srv.process.pid) in (before, set()) or _post(srv.port, "/score", {
                "model": "length", "items": _slow_items(1)})[0] != 200:
            assert time.monotonic() < deadline, srv.log()[-3000:]
            time.sleep(0.2)
