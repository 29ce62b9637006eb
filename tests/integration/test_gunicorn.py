"""Real gunicorn (`python -m service`) on a free loopback port, every endpoint called over HTTP."""
from __future__ import annotations

import gzip
import http.client
import json
import shutil
import socket
import time

import pytest

from tests.api.test_limits import benchmark_dialogue
from tests.conftest import BASELINES, MODEL_STORE, copy_store
from tests.live_server import running_server


def _call(port: int, method: str, path: str, body: object | None = None, raw: bytes | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    conn.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
    response = conn.getresponse()
    payload = response.read()
    conn.close()
    ctype = response.getheader("Content-Type", "")
    return response.status, (json.loads(payload) if "json" in ctype else payload.decode()), response


READ_TIMEOUT = 2.0


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    store = copy_store(tmp_path_factory.mktemp("gstore") / "model_store")
    # DIALSCORE_READ_TIMEOUT is 10 s by default; short for the stall test.
    with running_server(store, {"DIALSCORE_READ_TIMEOUT": str(READ_TIMEOUT)}) as srv:
        yield srv


ITEM = {"context": ["hey, what do you want to do tonight?"], "response": "let's go climbing.",
        "reference": "a movie sounds good."}


def test_every_endpoint_over_http(server):
    port = server.port
    assert _call(port, "GET", "/healthz")[:2] == (200, {"status": "ok"})
    status, body, _ = _call(port, "GET", "/readyz")
    assert status == 200 and set(body["models"]) >= set(BASELINES)
    # Ready once every worker of the pod has loaded, then while any serves.
    assert 1 <= body["workers_ready"] <= body["workers"] == 2
    status, models, _ = _call(port, "GET", "/models")
    assert status == 200
    assert all(m["providers"] for m in models["models"])
    status, doc, _ = _call(port, "GET", "/openapi.json")
    assert status == 200 and "/score" in doc["paths"]
    for model in models["models"]:
        if model["kind"] == "dialogue":
            items = [{"turns": [{"speaker": "user", "text": "hi! how are you?"},
                                {"speaker": "bot", "text": "great, thanks. you?"}]}]
        else:
            items = [ITEM]
        status, body, _ = _call(port, "POST", "/score", {"model": model["name"], "items": items})
        assert status == 200, (model["name"], body)
        assert body["version"] == model["version"] and len(body["scores"]) == 1
        if model["kind"] != "dialogue":
            status, body, _ = _call(port, "POST", "/rerank", {"model": model["name"], "context": ITEM["context"],
                                                              "candidates": ["sure.", "let's go climbing!"],
                                                              "reference": ITEM["reference"]})
            assert status == 200 and len(body["ranking"]) == 2
    bad = {**ITEM, "response": "x" * 10_001}  # over the default 10,000 characters
    status, body, _ = _call(port, "POST", "/score", {"model": "length", "items": [ITEM, bad]})
    assert status == 413 and set(body["error"]["details"]) == {"items.1.response"}
    status, body, _ = _call(port, "POST", "/score", {"model": "length", "items": [ITEM, bad], "on_invalid": "skip"})
    assert status == 200 and body["scores"][1] is None and body["skipped"] == [1], body
    status, body, _ = _call(port, "POST", "/correlate", {"human": [1, 2, 3, 4, 5], "scores": {"m": [2, 1, 4, 3, 5]},
                                                         "resamples": 200})
    assert status == 200, body
    status, body, _ = _call(port, "POST", "/human-eval", {"ratings": [
        {"rater": "w1", "system": "A", "item": "1", "scores": {"fun": 70}},
        {"rater": "w1", "system": "B", "item": "2", "scores": {"fun": 40}}]})
    assert status == 200, body
    status, body, _ = _call(port, "POST", "/score", raw=b"not json")
    assert status == 400 and body["error"]["code"] == "bad_json"


def test_mh_scores_the_longest_public_benchmark_dialogues_with_the_default_limits(server):
    """DSTC9's 630-turn dialogues with FED's and DSTC9's 3,414-character turns (API.md); one turn more than
    max_dialogue_turns is still a 413 naming the field."""
    dialogue = benchmark_dialogue()
    status, body, _ = _call(server.port, "POST", "/score", {"model": "mh", "items": [dialogue]})
    assert status == 200 and 1.0 <= body["scores"][0] <= 5.0, body
    limit = _call(server.port, "GET", "/models")[1]["limits"]["max_dialogue_turns"]
    status, body, _ = _call(server.port, "POST", "/score", {"model": "mh", "items": [benchmark_dialogue(limit + 1)]})
    assert status == 413 and list(body["error"]["details"]) == ["items.0.turns"], body


# The reference-free models of issue 33: served wherever their encoder is built (mpnet-base's graphs come
# from `make encoder-mpnet`, so a clean clone lists the mpnet ones under `not_built`).
REFERENCE_FREE = ("unref-minilm", "unref-minilm-commercial", "unref-mpnet", "unref-mpnet-minilm",
                  "unref-mpnet-commercial")
CANDIDATES = ["sure.", "", "let's go climbing, i know a good wall downtown!", "hey, what do you want to do tonight?"]


def test_a_live_bot_reranks_with_each_reference_free_model_and_a_referenced_one_is_told_which(server):
    port = server.port
    models = _call(port, "GET", "/models")[1]
    served = {m["name"]: m for m in models["models"]}
    built = (MODEL_STORE / "mpnet-base" / "encoder-fp32.onnx").is_file()
    for name in REFERENCE_FREE:
        if name.startswith("unref-mpnet") and not built:
            assert name not in served and "make encoder-mpnet" in models["not_built"][name]
            continue
        assert served[name]["kind"] == "unreferenced"
        status, body, _ = _call(port, "POST", "/rerank", {"model": name, "context": ITEM["context"],
                                                          "candidates": CANDIDATES})
        assert status == 200, (name, body)
        assert sorted(r["index"] for r in body["ranking"]) == [0, 1, 2, 3]
        assert body["ranking"][-1]["index"] in (1, 3), (name, body)  # copy and length signals: empty or copy last
    status, body, _ = _call(port, "POST", "/rerank", {"model": "minilm-cosine", "context": ITEM["context"],
                                                      "candidates": CANDIDATES})
    assert status == 422 and body["error"]["code"] == "invalid_request", body
    assert set(body["error"]["details"]) == {"reference"}
    named = body["error"]["message"].partition("need no reference: ")[2].partition(".")[0].split(", ")
    assert set(named) == {n for n, m in served.items() if m["kind"] == "unreferenced"} >= {"unref-minilm"}
    parts = body["error"]["message"].partition("options.reference_free true: ")[2].rstrip(".").split(", ")
    assert parts == ["minilm-cosine", "ruber", "ruber-minilm"], body
    # RUBER's unreferenced metric alone: asked of ruber and ruber-minilm with no reference
    for name in ("ruber", "ruber-minilm"):
        status, body, _ = _call(port, "POST", "/rerank", {"model": name, "context": ITEM["context"],
                                                          "candidates": CANDIDATES, "options": {"reference_free": True}})
        assert status == 200 and sorted(r["index"] for r in body["ranking"]) == [0, 1, 2, 3], (name, body)


def test_metrics_aggregate_every_worker(server):
    port = server.port
    before = _requests_total(port)
    for _ in range(20):
        _call(port, "POST", "/score", {"model": "length", "items": [ITEM]})
    after = _requests_total(port)
    assert after - before == 20  # whichever worker answers the scrape sees all 20


def _requests_total(port: int) -> float:
    text = _call(port, "GET", "/metrics")[1]
    prefix = 'dialscore_requests_total{endpoint="/score",method="POST",status="200"}'
    return sum(float(line.split()[-1]) for line in text.splitlines() if line.startswith(prefix))


def test_altered_artifact_takes_out_only_that_model(tmp_path):
    store = copy_store(tmp_path / "model_store", BASELINES)
    # change one byte of a listed artifact: the GloVe table, used by the three embedding baselines
    vectors = store / "glove-50d" / "vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-7] ^= 0x01
    vectors.write_bytes(bytes(data))
    with running_server(store, workers=1, allow_failed_models=True) as srv:
        status, body = srv.ready
        assert status == 503
        error = body["error"]
        assert error["code"] == "not_ready" and "glove-50d" in error["message"]
        assert "vectors.npy" in error["details"]["failed"]["glove-50d"]
        names = {m["name"] for m in _call(srv.port, "GET", "/models")[1]["models"]}
        assert names == {"bleu4", "rouge-l", "length"}
        status, _, _ = _call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})
        assert status == 200
        status, body, _ = _call(srv.port, "POST", "/score", {"model": "emb-average", "items": [ITEM]})
        assert status == 503 and body["error"]["code"] == "not_ready", body  # not loaded: the server's fault
        assert body["error"]["details"]["model"] == "emb-average"
        assert "vectors.npy" in srv.log()
    shutil.rmtree(store)


def _raw_exchange(port: int, request: bytes) -> tuple[str, dict]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(request)
        raw = conn.makefile("rb").read()
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    assert "content-type: application/json" in [line.lower() for line in lines], lines  # h11 writes names lower-case
    return lines[0], json.loads(body)


def test_requests_gunicorn_refuses_itself_get_contract_errors(server):
    # gunicorn answers these before the app: they were HTML pages, now the contract's JSON.
    cases = [
        (b"GET /" + b"a" * 5000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", "414", "too_large"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-%d: y\r\n" % i for i in range(120)) + b"\r\n", "431",
         "too_large"),
        (b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n", "431", "too_large"),
        (b"GET /healthz HTTP/1.1\r\n\r\n", "400", "bad_request"),  # HTTP/1.1 without Host (RFC 9112, 3.2)
        (b"GET /healthz HTTP/9.9\r\nHost: x\r\n\r\n", "400", "bad_request"),
        (b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}", "400", "bad_request"),
    ]
    for request, status, code in cases:
        line, body = _raw_exchange(server.port, request)
        assert line.split(" ")[1] == status, (request[:40], line)
        assert body["error"]["code"] == code and body["error"]["message"], body
    status, text, _ = _call(server.port, "GET", "/metrics")
    assert 'dialscore_errors_total{code="bad_request"}' in text


def test_query_values_never_reach_the_log(server):
    """A secret in a URL, in the referer or in a request line gunicorn refuses is logged as names only."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    conn.request("GET", "/models?token=leak-one&verbose=1",
                 headers={"Referer": "https://bot.example/chat?session=leak-two", "X-Request-ID": "query-log"})
    assert conn.getresponse().read() and conn.close() is None
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall(b"GET /models?token=leak-three\r\n\r\n")  # no HTTP version: gunicorn refuses the line
        raw.makefile("rb").read()
    deadline = time.monotonic() + 10
    while '"query-log"' not in server.log() and time.monotonic() < deadline:
        time.sleep(0.1)
    log = server.log()
    assert "leak-" not in log
    [access] = [json.loads(line) for line in log.splitlines() if '"query-log"' in line and '"gunicorn.access"' in line]
    assert (access["path"], access["query"], access["status"]) == ("/models", "token&verbose", 200)


def test_a_refused_body_leaves_the_connection_usable(server):
    """A 413 says keep-alive; gunicorn drained 64 KiB of the unread body and closed, so the
    client's next request on the connection failed (7 of 10)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        big = json.dumps({"model": "length", "items": [ITEM] * 10_000}).encode()  # ~1.2 MB, over 1 MiB
        conn.request("POST", "/score", body=big, headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 413 and json.loads(response.read())["error"]["code"] == "too_large"
        conn.request("POST", "/score", body=json.dumps({"model": "length", "items": [ITEM]}).encode(),
                     headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 200, response.read()
        response.read()
    finally:
        conn.close()


def _answer(conn: socket.socket) -> tuple[str, dict, list[str]]:
    raw = conn.makefile("rb").read()
    head, body = raw.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    return lines[0], json.loads(body), [line.lower() for line in lines[1:]]


def test_clients_that_stall_are_answered_408_and_free_the_threads(server):
    """Four connections that each sent one byte held all four threads (2 workers x 2), so /healthz
    went unanswered for as long as they stayed open. Each request now has
    DIALSCORE_READ_TIMEOUT to arrive, in its headers or its body."""
    stalled = [socket.create_connection(("127.0.0.1", server.port), timeout=30) for _ in range(4)]
    for conn in stalled:
        conn.sendall(b"G")
    mid_body = socket.create_connection(("127.0.0.1", server.port), timeout=30)
    mid_body.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"model\": ")
    try:
        time.sleep(0.5)  # every thread is now waiting on a stalled client
        started = time.monotonic()
        status, body, _ = _call(server.port, "GET", "/healthz")
        assert status == 200 and time.monotonic() - started < READ_TIMEOUT + 5
        for conn in [*stalled, mid_body]:
            line, error, headers = _answer(conn)
            assert line.split(" ")[1] == "408", line
            assert "connection: close" in headers, headers  # the rest of the body is never read
            assert error["error"]["code"] == "request_timeout" and error["error"]["message"], error
            assert error["error"]["details"] == {"read_timeout_s": READ_TIMEOUT}, error  # headers or body alike
    finally:
        for conn in [*stalled, mid_body]:
            conn.close()
    # a whole request on a fresh connection is served as before
    assert _call(server.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0] == 200


def test_replacement_workers_load_before_they_take_requests(tmp_path):
    """With max_requests, a worker that replaces another loads first and its sibling serves: no
    503 not_ready, where background loading answered 503 and counted those towards max_requests
    until no worker ever finished loading."""
    store = copy_store(tmp_path / "model_store", ("length", "bleu4"))
    metrics_dir = tmp_path / "metrics"
    env = {"DIALSCORE_MAX_REQUESTS": "15", "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    with running_server(store, env) as srv:
        statuses = []
        for _ in range(6):  # rounds, each after both workers serve: one past its count waits for its sibling
            deadline = time.monotonic() + 60
            while _call(srv.port, "GET", "/readyz")[1].get("workers_ready") != 2 and time.monotonic() < deadline:
                time.sleep(0.1)
            statuses += [_call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0] for _ in range(20)]
        assert statuses.count(200) == 120, {s: statuses.count(s) for s in set(statuses)}
        boots = srv.log().count("Booting worker")
        assert boots >= 4, boots  # workers were replaced along the way
        # The replaced workers' metrics are folded into one archive per type: two files per live
        # worker plus two, where they had accumulated two per worker ever booted; no count is lost.
        files = sorted(p.name for p in metrics_dir.glob("*.db"))
        assert len(files) <= 2 * 2 + 2, files
        assert {"counter_archive.db", "histogram_archive.db"} <= set(files), files
        assert _requests_total(srv.port) == 120


def test_a_worker_past_its_memory_limit_is_replaced_and_no_request_fails(tmp_path):
    """DIALSCORE_MAX_WORKER_MEMORY_MIB=1: every worker is over it after its first request. One recycles
    (its requests in flight finish, the replacement loads before it serves) while its sibling, over too,
    serves on until the replacement has loaded: recycled together, they left the pod no worker, and the
    requests meanwhile were answered 503 not_ready."""
    # unref-minilm's encoder: a replacement takes a while to load, long enough for several requests.
    store = copy_store(tmp_path / "model_store", ("length", "unref-minilm"))
    env = {"DIALSCORE_MAX_WORKER_MEMORY_MIB": "1", "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    with running_server(store, env) as srv:
        # Probes never recycle a worker: else the pod would flap out of readiness under the limit.
        assert [_call(srv.port, "GET", "/readyz")[0] for _ in range(6)] == [200] * 6
        assert "restarting it" not in srv.log()
        statuses, closes = [], []
        for _ in range(3):  # rounds, each after both workers serve
            _await_workers_ready(srv.port, 2)
            answers = [_call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]}) for _ in range(6)]
            statuses += [status for status, _, _ in answers]
            # The answer a recycle follows says so: no keep-alive promised on a connection about to drop.
            closes.append([r.getheader("Connection", "").lower() == "close" for _, _, r in answers])
        assert statuses.count(200) == 18, {s: statuses.count(s) for s in set(statuses)}
        assert [c.count(True) for c in closes] == [1, 1, 1] and all(c[0] for c in closes), closes
        _await_workers_ready(srv.port, 2)
        log = srv.log()
        assert log.count("over DIALSCORE_MAX_WORKER_MEMORY_MIB=1: restarting it") == 3
        assert log.count("Booting worker") == 2 + 3, log.count("Booting worker")


def _await_workers_ready(port: int, workers: int, wait_s: float = 120) -> None:
    deadline = time.monotonic() + wait_s
    while _call(port, "GET", "/readyz")[1].get("workers_ready") != workers and time.monotonic() < deadline:
        time.sleep(0.1)


def test_an_answer_given_without_reading_the_body_closes_the_connection(server):
    """GET /healthz with a body that never comes: the 200 says Connection: close and is the last thing
    sent. gunicorn used to drain the rest and, at the read deadline, send an unasked 408, which a
    pipelining client takes for the answer to its next request."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nabc")
        started = time.monotonic()
        raw = conn.makefile("rb").read()
    assert raw.count(b"HTTP/1.1 ") == 1, raw
    head = raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").lower()
    assert head.startswith("http/1.1 200") and "connection: close" in head, head
    assert time.monotonic() - started < READ_TIMEOUT, "the server waited for the body before closing"


def test_a_declared_length_past_what_is_ever_drained_is_413_at_once_and_closes(server):
    """Content-Length of 10^20 with a few bytes sent: the 413 waited out the read timeout while the
    server drained a body that could never be drained to its end; the drain
    now gives each read DRAIN_IDLE_SECONDS."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 99999999999999999999\r\n\r\n{\"model\": \"length\"}")
        started = time.monotonic()
        line, error, headers = _answer(conn)
    assert line.split(" ")[1] == "413" and error["error"]["code"] == "too_large", (line, error)
    assert "connection: close" in headers, headers
    assert time.monotonic() - started < READ_TIMEOUT, "the server waited for the body before answering"


def test_a_compressed_transfer_coding_is_refused_400_not_read_as_utf16(server):
    """A gzip body under `Transfer-Encoding: gzip, chunked` was refused as 'UTF-16 or UTF-32'; h11 knows
    `chunked` alone and refuses the request as bad HTTP, in the contract's form."""
    body = gzip.compress(json.dumps({"model": "length", "items": [ITEM]}).encode())
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(b"POST /score HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     b"Transfer-Encoding: gzip, chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body
                     + b"\r\n0\r\n\r\n")
        line, error, _ = _answer(conn)
    assert line.split(" ")[1] == "400" and error["error"]["code"] == "bad_request", (line, error)


def test_a_body_past_the_drain_budget_sent_whole_still_gets_its_413(server):
    """4.5 MiB, more than the 4 x 1 MiB a 413 drains, sent whole before the answer is read (as
    http.client and requests do): not draining such bodies at all met this client with a reset."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("POST", "/score", body=b"x" * (4_500 << 10), headers={"Content-Type": "application/json"})
        response = conn.getresponse()
        assert response.status == 413 and json.loads(response.read())["error"]["code"] == "too_large"
    finally:
        conn.close()


def test_a_worker_whose_metrics_cannot_be_folded_does_not_take_the_server_down(tmp_path):
    store = copy_store(tmp_path / "model_store", ("length",))
    metrics_dir = tmp_path / "metrics"
    env = {"DIALSCORE_MAX_REQUESTS": "10", "PROMETHEUS_MULTIPROC_DIR": str(metrics_dir)}
    with running_server(store, env) as srv:
        (metrics_dir / "counter_archive.db").mkdir()  # the fold cannot write its archive (as a full volume)
        # A worker past its count waits for its sibling to serve: after a recycle, both serve first.
        deadline = time.monotonic() + 60
        while _call(srv.port, "GET", "/readyz")[1].get("workers_ready") != 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        statuses = [_call(srv.port, "POST", "/score", {"model": "length", "items": [ITEM]})[0] for _ in range(60)]
        assert statuses.count(200) == 60, statuses
        deadline = time.monotonic() + 30  # the master folds a worker once it has reaped it
        while "could not fold the metrics of worker" not in srv.log() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert "could not fold the metrics of worker" in srv.log()
        assert _call(srv.port, "GET", "/healthz")[0] == 200


def test_a_chunked_body_left_unread_closes_the_connection_too(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(b"POST /nope HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n")
        started = time.monotonic()
        raw = conn.makefile("rb").read()
    assert raw.count(b"HTTP/1.1 ") == 1 and raw.startswith(b"HTTP/1.1 404"), raw
    assert b"connection: close" in raw.lower() and time.monotonic() - started < READ_TIMEOUT


def test_a_whole_body_left_unread_keeps_the_connection_for_the_next_request(server):
    """A 404 for a request whose small body has arrived reads it and keeps the connection: a
    pipelined request behind it is answered (closing there lost it)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as conn:
        conn.sendall(b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd"
                     b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        raw = conn.makefile("rb").read()
    assert raw.count(b"HTTP/1.1 ") == 2, raw
    assert raw.startswith(b"HTTP/1.1 404") and b"HTTP/1.1 200" in raw, raw


def test_a_worker_whose_master_was_killed_exits_and_frees_the_port(tmp_path):
    """`kill -9` of the master: its workers, adopted by init, served on unsupervised for as long as they
    lived, and held the port a restarted server must bind. Each notices within a tick and drains."""
    import os
    import signal

    from tests.live_server import worker_pids

    store = copy_store(tmp_path / "model_store", ("length",))
    with running_server(store, workers=1) as srv:
        [worker] = worker_pids(srv.process.pid)
        os.kill(srv.process.pid, signal.SIGKILL)
        srv.process.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(worker):
            time.sleep(0.1)
        assert not _alive(worker), "the orphaned worker still runs"
        with socket.socket() as probe:
            assert probe.connect_ex(("127.0.0.1", srv.port)) != 0, "something still listens on the port"
        assert "its master has gone; shutting down" in srv.log()


def test_a_replacement_whose_models_fail_to_load_in_a_ready_pod_exits_instead_of_serving(tmp_path):
    """A replacement worker that failed to load served anyway in the ready pod: /readyz flapped between its
    503 and its sibling's 200, and its share of scoring requests got 503 `not_ready`, which clients must not
    retry, for good (gunicorn had no reason to replace a live worker). It now exits and another is started,
    while the sibling serves every request."""
    import os
    import signal

    from tests.live_server import worker_pids

    store = copy_store(tmp_path / "model_store", ("length", "emb-average"))
    with running_server(store, {"DIALSCORE_MODELS": "length,emb-average"}) as srv:
        vocab = store / "glove-50d" / "vocab.json"
        vocab.write_bytes(vocab.read_bytes().replace(b"the", b"teh", 1))  # its hash no longer matches
        os.kill(sorted(worker_pids(srv.process.pid))[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while "failed to load in a pod whose other workers serve them" not in srv.log():
            assert time.monotonic() < deadline, srv.log()[-3000:]
            time.sleep(0.2)
        statuses = [_call(srv.port, "POST", "/score", {"model": "emb-average", "items": [ITEM]})[0] for _ in range(30)]
        statuses += [_call(srv.port, "GET", "/readyz")[0] for _ in range(30)]
        assert statuses == [200] * 60, {s: statuses.count(s) for s in set(statuses)}


@pytest.mark.parametrize("sig", ["SIGQUIT", "SIGINT"])
def test_a_quick_shutdown_of_the_master_stops_the_workers_at_once(tmp_path, sig):
    """gunicorn's quick shutdown sends SIGQUIT to the workers, whose handler (uvicorn_worker's) set a flag
    uvicorn never reads: an idle server took the whole graceful timeout to stop, then killed its workers."""
    import os
    import signal

    store = copy_store(tmp_path / "model_store", ("length",))
    with running_server(store, {"DIALSCORE_GRACEFUL_TIMEOUT": "30"}, workers=1) as srv:
        started = time.monotonic()
        os.kill(srv.process.pid, getattr(signal, sig))
        srv.process.wait(timeout=60)
        assert time.monotonic() - started < 10, "the master waited out the graceful timeout"
        assert "SIGKILL" not in srv.log()


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for init to reap it has exited)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_the_worker_timeout_bounds_model_loading_done_before_serving(tmp_path):
    """gunicorn's heartbeat file starts at the wall clock's time, which its check against the monotonic clock
    never finds stale: a worker loading before it serves (DIALSCORE_LOAD_SYNC, and every replacement) was
    never timed out, so a hung load hung the worker for good. Every committed model takes seconds to load;
    with DIALSCORE_WORKER_TIMEOUT=1 the master replaces the worker before it is done."""
    import os
    import subprocess
    import sys

    from tests.live_server import REPO, _get, _stop, free_port

    port, log_path = free_port(), tmp_path / "server.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_MODEL_STORE": str(MODEL_STORE),
           "DIALSCORE_LOAD_SYNC": "true", "DIALSCORE_WORKER_TIMEOUT": "1"}
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    with open(log_path, "wb") as log:
        process = subprocess.Popen([sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(port),
                                    "--workers", "1"], cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            deadline = time.monotonic() + 90
            while b"WORKER TIMEOUT" not in log_path.read_bytes():
                assert time.monotonic() < deadline and process.poll() is None, log_path.read_text()[-3000:]
                try:
                    status = _get(port, "/readyz")[0]
                except OSError:
                    status = None
                assert status != 200, "the worker loaded every model past its timeout and was not replaced"
                time.sleep(0.2)
        finally:
            _stop(process)
