"""The front's bookkeeping over any mix of requests at once, in process over ASGI as uvicorn hands
requests over: bodies in parts, slow, stalled past the read timeout, too large, over the worker's
pending bytes, clients that leave midway, tight budgets, full queues, a SIGTERM or a recycle midway.
Every request that stays gets one whole answer in the contract's form, none a 5xx but 503, and the
app's own answer wherever the front does not refuse it; once all are done the front holds no body
bytes and no admission holds a ticket. FRAMING_TEST_EXAMPLES sets the examples, as for
test_framing.py (60; a long run: 20000)."""
from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import os
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from service.config import load_server_settings
from tests.asgi_client import Client

ITEM = {"context": ["how was your weekend?"], "response": "great, i went hiking!"}
SHAPES = [  # (method, path, body)
    *(("POST", "/score", json.dumps({"model": "length", "items": [ITEM] * n}).encode()) for n in (1, 4, 30)),
    ("POST", "/score", b'{"model": "length", "items": [{"context": '),
    ("POST", "/score", json.dumps({"model": "no-such-model", "items": [ITEM]}).encode()),
    ("POST", "/rerank", json.dumps({"model": "length", "context": ["hi"], "candidates": ["a", "bb"]}).encode()),
    ("POST", "/correlate", json.dumps({"human": [1, 2, 3, 4], "metrics": {"m": [2, 1, 4, 3]}}).encode()),
    ("POST", "/v2/models/length/infer", b'{"inputs": []}'),
    ("GET", "/healthz", b""), ("GET", "/readyz", b"x" * 40), ("HEAD", "/healthz", b""),
    ("GET", "/no-such-page", b"y" * 100), ("DELETE", "/score", b""), ("OPTIONS", "/score", b""),
]
PROBES = {"/healthz", "/readyz"}
EXAMPLES = int(os.environ.get("FRAMING_TEST_EXAMPLES", "60"))
FRONT_CODES = {"shutting_down", "overloaded", "deadline_exceeded", "too_large", "request_timeout", "bad_header"}


CLIENTS = st.builds(
    lambda shape, **kw: Client(*shape, **kw), shape=st.sampled_from(SHAPES), parts=st.integers(1, 4),
    gap_s=st.sampled_from([0.0, 0.0, 0.005, 0.02, 0.4]), chunked=st.booleans(),
    leave_after=st.none() | st.integers(0, 3), budget=st.sampled_from([None, None, "0.001", "0.05", "5", "x"]),
    start_s=st.sampled_from([0.0, 0.0, 0.01, 0.05, 0.15]))


@pytest.fixture(scope="module")
def app(baseline_store):
    from service.app import create_app

    return create_app({"model_store": baseline_store, "load_sync": True})


@pytest.fixture(scope="module")
def app_answers(app) -> dict[tuple[str, str, bytes], int]:
    """Each shape's status from the app alone (Flask's test client): what the front must hand on."""
    client = app.test_client()
    return {shape: client.open(shape[1], method=shape[0], data=shape[2], content_type="application/json").status_code
            for shape in SHAPES}


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(clients=st.lists(CLIENTS, min_size=1, max_size=12), threads=st.integers(1, 2),
       max_queue=st.integers(1, 3), max_body_bytes=st.sampled_from([64, 400, 4000]),
       max_pending_bytes=st.sampled_from([100, 1000, 100_000]), sigterm_after_s=st.none() | st.floats(0, 0.1),
       max_requests=st.integers(0, 6))
def test_every_request_is_answered_once_and_nothing_is_held_after(app, app_answers, clients, threads, max_queue,
                                                                  max_body_bytes, max_pending_bytes, sigterm_after_s,
                                                                  max_requests):
    from service.server.front import Front

    limits = dataclasses.replace(load_server_settings(), threads=threads, max_queue=max_queue, read_timeout=0.3,
                                 max_body_bytes=max_body_bytes, max_pending_bytes=max_pending_bytes)
    front, order, recycled = Front(app, limits), itertools.count(1), []
    front.max_requests, front.recycle = max_requests, lambda: recycled.append(front.answered)
    lanes = (front.probes, front.scoring, front.research, front.other)

    async def arrive(client: Client) -> None:
        await asyncio.sleep(client.start_s)
        client.arrived = time.monotonic()  # as the front clocks it, and counts all but probes
        client.order = None if client.path in PROBES else next(order)
        await front(client.scope(), client.receive, client.send)

    async def sigterm() -> None:  # as the worker's signal handler does (after a recycle, it changes nothing)
        await asyncio.sleep(sigterm_after_s)
        if front.stopping_since is None:
            front.stopping_since = time.monotonic()

    async def run() -> None:
        signals = [sigterm()] if sigterm_after_s is not None else []
        await asyncio.wait_for(asyncio.gather(*map(arrive, clients), *signals), 30)

    try:
        asyncio.run(run())
    finally:
        for lane in lanes:
            lane.run.executor.shutdown(wait=True)
    last = [c for c in clients if c.order == max_requests]  # the request that reaches the count, if any
    before_sigterm = last and (sigterm_after_s is None or last[0].arrived < front.stopping_since)
    assert recycled == ([max_requests] if before_sigterm else []), recycled  # once, and never after a SIGTERM
    for client in clients:
        starts = [m for m in client.messages if m["type"] == "http.response.start"]
        assert len(starts) <= 1, client
        stopped = sigterm_after_s is not None and client.arrived >= front.stopping_since
        if starts and (stopped or 0 < max_requests <= (client.order or 0)):  # no keep-alive promised on the way out
            assert (b"connection", b"close") in starts[0]["headers"], client
        if client.leave_after is not None and client.leave_after < len(client.pieces):
            continue  # left before its request was whole: an answer, if any, goes nowhere
        assert len(starts) == 1 and client.answered.is_set(), client
        status = starts[0]["status"]
        assert status < 500 or status == 503, (status, client)
        assert not stopped or status == 503, (status, client)
        refused_by_front = status in (408, 413, 503) or client.budget == "x"
        assert refused_by_front or status == app_answers[client.method, client.path, client.body], (status, client)
        payload = b"".join(m.get("body", b"") for m in client.messages if m["type"] == "http.response.body")
        if status in (408, 413, 503) and client.method != "HEAD":
            error = json.loads(payload)["error"]
            if client.path.startswith("/v2/"):  # the Open Inference Protocol's form: a message
                assert isinstance(error, str) and error, payload
            else:
                assert error["code"] in FRONT_CODES and (not stopped or error["code"] == "shutting_down")
    assert front.held == 0
    for lane in lanes:
        assert not lane.admission.queue and not lane.admission.running, lane.name
