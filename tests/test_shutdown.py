"""Graceful shutdown through the real entry point: SIGTERM drains the request in flight.

`python -m service` starts gunicorn on a free loopback port. A client sends the headers and
half of a /score body, the master gets SIGTERM (what Kubernetes sends after preStop), and
only then does the client send the rest: the request must still be answered in full, while
new requests are not served and the server exits cleanly.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_ready(port: int, proc: subprocess.Popen, seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else "server exited"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.2)
    raise AssertionError("the server did not become ready")


@pytest.fixture()
def server(tmp_path):
    store = tmp_path / "store"
    shutil.copytree(REPO / "model_store" / "length", store / "length")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO), "DIALSCORE_MODEL_STORE": str(store), "DIALSCORE_MODELS": "length",
           "DIALSCORE_GRACEFUL_TIMEOUT": "20", "DIALSCORE_INTRA_OP_THREADS": "1",
           "PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "metrics")}
    proc = subprocess.Popen([sys.executable, "-m", "service", "--host", "127.0.0.1", "--port", str(port),
                             "--workers", "1"], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        wait_ready(port, proc)
        yield proc, port
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)


def _late_request(port: int) -> socket.socket | None:
    """A request sent after SIGTERM: refused, or left unanswered until the server is gone."""
    try:
        late = socket.create_connection(("127.0.0.1", port), timeout=5)
    except ConnectionRefusedError:
        return None
    late.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
    return late


def test_sigterm_drains_the_request_in_flight(server):
    proc, port = server
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
    if late is not None:  # the kernel may still complete a handshake, but nothing answers it
        late.settimeout(10)
        try:
            assert late.recv(65536) == b""
        except (ConnectionResetError, TimeoutError):
            pass
        finally:
            late.close()
    status_line, _, rest = response.partition(b"\r\n")
    assert status_line.split()[1] == b"200", response
    headers, _, payload = rest.partition(b"\r\n\r\n")
    assert b"x-request-id: drain-test" in headers.lower()
    assert json.loads(payload)["scores"] == [5.0, 1.0]
    log = proc.stderr.read().decode()
    access = [json.loads(line) for line in log.splitlines() if line.startswith("{") and '"gunicorn.access"' in line]
    assert any(r["path"] == "/score" and r["request_id"] == "drain-test" and r["status"] == 200 for r in access)
