"""Graceful shutdown through the real entry point: SIGTERM drains the request in flight.

`python -m service` starts gunicorn on a free loopback port. A client sends the headers and
half of a /score body, the master gets SIGTERM (what Kubernetes sends after preStop), and
only then does the client send the rest: the request must still be answered in full, while
a new request is refused at connect or answered 503 `shutting_down`, and the server exits cleanly.
"""
from __future__ import annotations

import json
import shutil
import signal
import socket
import time

import pytest

from tests.conftest import REPO
from tests.live_server import running_server


@pytest.fixture()
def server(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(REPO / "model_store" / "length", store / "length")
    env = {"DIALSCORE_MODELS": "length", "DIALSCORE_GRACEFUL_TIMEOUT": "20", "DIALSCORE_INTRA_OP_THREADS": "1",
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    with running_server(store, env, timeout=90, workers=1, cwd=tmp_path) as running:
        yield running


def _late_request(port: int) -> socket.socket | None:
    """A request sent after SIGTERM: refused at connect, or answered 503."""
    try:
        late = socket.create_connection(("127.0.0.1", port), timeout=5)
    except ConnectionRefusedError:
        return None
    body = b'{"model": "length", "items": [{"context": ["hi"], "response": "hello"}]}'
    late.sendall(f"POST /score HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    return late


def test_sigterm_drains_the_request_in_flight(server):
    proc, port = server.process, server.port
    body = json.dumps({"model": "length", "items": [
        {"context": ["hello there"], "response": "hi, nice to meet you"},
        {"context": ["how are you?"], "response": "fine"}]}).encode()
    head = (f"POST /score HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nX-Request-ID: drain-test\r\nConnection: close\r\n\r\n").encode()
    client = socket.create_connection(("127.0.0.1", port), timeout=30)
    try:
        client.sendall(head + body[:20])
        time.sleep(1.0)  # the worker has read the headers and waits for the rest of the body
        proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        late = _late_request(port)
        client.sendall(body[20:])
        response = b""
        while chunk := client.recv(65536):
            response += chunk
    finally:
        client.close()
    assert proc.wait(timeout=30) == 0
    if late is not None:  # accepted after SIGTERM: answered 503 shutting_down, never reset unanswered
        late.settimeout(10)
        try:
            answer = late.makefile("rb").read()
        finally:
            late.close()
        head = answer.split(b"\r\n\r\n", 1)[0].lower()
        assert head.startswith(b"http/1.1 503") and b"retry-after: 1" in head, answer
        assert b'"shutting_down"' in answer, answer
    status_line, _, rest = response.partition(b"\r\n")
    assert status_line.split()[1] == b"200", response
    headers, _, payload = rest.partition(b"\r\n\r\n")
    assert b"x-request-id: drain-test" in headers.lower()
    assert json.loads(payload)["scores"] == [5.0, 1.0]
    log = server.log()
    access = [json.loads(line) for line in log.splitlines() if line.startswith("{") and '"gunicorn.access"' in line]
    assert any(r["path"] == "/score" and r["request_id"] == "drain-test" and r["status"] == 200 for r in access)
